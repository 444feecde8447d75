"""The headless Terminal ports (plain lines, JSON lines), the word and log wrapping
they and the full screen share, and the notifications that ring the person."""
