"""A server's requests mid-call, between the SDK's types and treadle's values: an
elicitation as a :class:`FormRequest`, a ``sampling/createMessage`` as a
:class:`SamplingRequest`, and the model's reply back as the SDK's result."""

from __future__ import annotations

import mcp_types as mcp

from treadle.domain.rules.elicitation import form_fields
from treadle.domain.values.server_requests import (
    FormRequest,
    SamplingMessage,
    SamplingReply,
    SamplingRequest,
)

USER_REJECTED = -1
"""The error code the protocol's examples give a completion the person refused."""


def form_request(server: str, params: mcp.ElicitRequestParams) -> FormRequest:
    if isinstance(params, mcp.ElicitRequestURLParams):
        return FormRequest(server, params.message, url=params.url)
    return FormRequest(server, params.message, form_fields(params.requested_schema))


def sampling_request(server: str, params: mcp.CreateMessageRequestParams) -> SamplingRequest:
    """The server's messages as text (an image or audio is named, not sent)."""
    messages = []
    for message in params.messages:
        parts = []
        for block in message.content_as_list:
            if isinstance(block, mcp.TextContent):
                parts.append(block.text)
            else:
                parts.append(f"[{getattr(block, 'type', 'content')} left out]")
        text = "\n".join(parts)
        messages.append(
            SamplingMessage("assistant", text)
            if message.role == "assistant"
            else SamplingMessage("user", text)
        )
    return SamplingRequest(server, tuple(messages), params.system_prompt or "", params.max_tokens)


def sampled(reply: SamplingReply) -> mcp.CreateMessageResult | mcp.ErrorData:
    if reply.declined:
        return mcp.ErrorData(code=USER_REJECTED, message=f"Declined: {reply.why}")
    if reply.why:
        return mcp.ErrorData(code=mcp.INTERNAL_ERROR, message=reply.why)
    return mcp.CreateMessageResult(
        role="assistant",
        content=mcp.TextContent(text=reply.text),
        model="treadle",
        stop_reason=reply.stop_reason,
    )
