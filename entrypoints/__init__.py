"""The command line and the container that wires adapters to ports.

Imports sit at the top of each module, except where start-up time needs them late;
each such place is a row of :data:`LAZY_IMPORTS` (the importing module, what it
imports, and why), and a test holds every function-level import in the entrypoints
to a row. ``treadle --version`` loads argparse and the providers' table; a session
loads the adapters it uses, when it uses them.
"""

LAZY_IMPORTS: dict[tuple[str, str], str] = {
    ("cli", "*"): "treadle --version and --help load only argparse and the providers' table; "
    "each command imports its own module, a stop's or a bug's line what it prints",
    ("commands", "treadle.entrypoints.changes"): "the checkpoints only for undo, redo and diff",
    ("commands", "treadle.entrypoints.project_context"): "the MCP client only for mcp and context",
    ("commands", "treadle.entrypoints.wiring"): "treadle sessions, trust and config run "
    "without the container and its adapters (config builds the model only to ask its server)",
    ("commands", "treadle.entrypoints.container"): "the same: the container only for replay",
    ("commands", "dependency_injector"): "the same",
    ("commands", "treadle.adapters.fakes"): "the fakes a replay plays through, only for replay",
    ("session", "treadle.entrypoints.container"): "a broken configuration, a missing key or a "
    "busy session is said before the container and every adapter load",
    ("session", "treadle.adapters.output_schema"): "jsonschema only when an output "
    "schema is configured, to say a broken one before the session starts",
    ("session", "treadle.entrypoints.wiring"): "the same: its loader, before the container",
    ("session", "treadle.entrypoints.interactive"): "blessed only for an interactive session",
    ("session", "treadle.entrypoints.workflows"): "the same as the container: only for "
    "--command, once the session has started",
    ("workflows", "treadle.adapters.tools.skill"): "the skill tool only when there is a skill",
    ("interactive", "treadle.adapters.blessed_terminal"): "the same",
    ("changes", "treadle.adapters.blessed_terminal"): "colour for a diff only on a terminal",
    ("wiring", "*"): "a session loads only the adapters it uses: no MCP client without "
    "servers, no process adapter before the first command, no checkpoints outside a session",
    ("providers", "treadle.adapters"): "each provider's adapter (httpx, for HTTP) only when "
    "it is the one used",
    ("config_check", "treadle.adapters.mcp"): "the MCP client only when a server is configured",
    ("config_rules", "treadle.adapters.mcp"): "the same",
    ("config_check", "urllib.parse"): "only when a URL is configured",
    ("config_check", "ipaddress"): "only when a URL names an address",
    ("config", "tomllib"): "only when there is a file to read",
    ("paths", "platformdirs"): "only when no variable names the folder",
    ("batch_turn", "treadle.entrypoints"): "a turn started ahead holds stop signals first, "
    "then loads what its turn will need while nobody waits for it",
    ("batch_wiring", "treadle.adapters.batch"): "the batch engines only in a batch, Ray only "
    "for --engine ray",
}
"""Every function-level import of the entrypoints but ``batch.py``'s (not yet listed)."""
