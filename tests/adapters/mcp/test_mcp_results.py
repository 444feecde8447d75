"""A result's content as the model reads it, from the SDK's own result types."""

from __future__ import annotations

import base64

import mcp_types as mcp

from treadle.adapters.mcp.results import answer_of
from treadle.adapters.mcp.values import McpAnswer


def test_text_is_joined_and_everything_else_is_described_by_type_and_size() -> None:
    result = mcp.CallToolResult(
        content=[
            mcp.TextContent(text="two things"),
            mcp.AudioContent(data=base64.b64encode(b"x" * 1000).decode(), mime_type="audio/wav"),
            mcp.EmbeddedResource(
                resource=mcp.TextResourceContents(uri="file:///a.txt", text="hello")
            ),
            mcp.EmbeddedResource(
                resource=mcp.BlobResourceContents(
                    uri="file:///b.bin", blob=base64.b64encode(b"\0" * 10).decode()
                )
            ),
            mcp.ResourceLink(uri="file:///c.log", name="c.log", mime_type="text/plain", size=1234),
            mcp.ResourceLink(uri="file:///d", name="d"),
        ]
    )
    assert answer_of(result).text.splitlines() == [
        "two things",
        "[audio: audio/wav, 1,000 bytes]",
        "[resource file:///a.txt (text)]",
        "hello",
        "[resource file:///b.bin: binary, 10 bytes]",
        "[resource link file:///c.log (c.log: text/plain, 1,234 bytes)]",
        "[resource link file:///d (d)]",
    ]


def test_structured_content_is_the_answer_when_there_is_no_text() -> None:
    result = mcp.CallToolResult(content=[], structured_content={"temperature": 21})
    assert answer_of(result) == McpAnswer('{\n "temperature": 21\n}')
    with_text = mcp.CallToolResult(
        content=[mcp.TextContent(text="21 degrees")], structured_content={"temperature": 21}
    )
    assert answer_of(with_text).text == "21 degrees"


def test_an_error_without_content_still_says_it_failed() -> None:
    assert answer_of(mcp.CallToolResult(content=[], is_error=True)) == McpAnswer(
        "the tool reported an error without saying what", True
    )
    assert answer_of(mcp.CallToolResult(content=[])) == McpAnswer("(no content)")
