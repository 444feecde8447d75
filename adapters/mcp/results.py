"""A tool's result as the model reads it: text joined, everything else by type and size.

Example: a result of a text block and a PNG reads::

    here is a picture
    [image: image/png, 73 bytes]
"""

from __future__ import annotations

import json

import mcp_types as mcp

from treadle.adapters.mcp.values import McpAnswer


def answer_of(result: mcp.CallToolResult) -> McpAnswer:
    """The result's content as one text; ``isError`` makes it a failed call."""
    parts = [_block_text(block) for block in result.content]
    has_text = any(isinstance(block, mcp.TextContent) for block in result.content)
    if not has_text and result.structured_content is not None:
        # The content a server gives for older clients is optional beside structured
        # content: without any text, the structure is the answer.
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text = "\n".join(parts)
    if result.is_error:
        return McpAnswer(text or "the tool reported an error without saying what", True)
    return McpAnswer(text or "(no content)")


def _block_text(block: mcp.ContentBlock) -> str:
    match block:
        case mcp.TextContent(text=text):
            return text
        case mcp.ImageContent(data=data, mime_type=mime):
            return f"[image: {mime}, {_size(data)}]"
        case mcp.AudioContent(data=data, mime_type=mime):
            return f"[audio: {mime}, {_size(data)}]"
        case mcp.EmbeddedResource(resource=mcp.TextResourceContents() as resource):
            return f"[resource {resource.uri} ({resource.mime_type or 'text'})]\n{resource.text}"
        case mcp.EmbeddedResource(resource=mcp.BlobResourceContents() as resource):
            mime = resource.mime_type or "binary"
            return f"[resource {resource.uri}: {mime}, {_size(resource.blob)}]"
        case mcp.ResourceLink(uri=uri, name=name, mime_type=mime, size=size):
            what = ", ".join(part for part in (mime, f"{size:,} bytes" if size else "") if part)
            return f"[resource link {uri} ({name}{': ' + what if what else ''})]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def _size(base64_data: str) -> str:
    """The decoded size, counted without decoding."""
    data = base64_data.rstrip()
    size = len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))
    return f"{max(0, size):,} bytes"
