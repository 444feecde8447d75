"""The command line and the container that wires adapters to ports.

Imports sit at the top of each module, except where start-up time needs them late;
each such place is a row of :data:`LAZY_IMPORTS` (the importing module, what it
imports, and why), and a test holds every function-level import in the entrypoints
to a row. ``treadle --version`` loads argparse and the providers' table; a session
loads the adapters it uses, when it uses them.

Start-up is part of the product (issue 21: process start to first request at most 0.8
times Codex's). The first request needs the configuration, the container, the model
adapter, the screen and the tools' descriptions; :data:`NOT_BEFORE_FIRST_REQUEST` names
what it goes out without, and why, and a test runs a real session against a local
server to check that none of it is loaded when the first request is sent.
"""

LAZY_IMPORTS: dict[tuple[str, str], str] = {
    ("cli", "*"): "treadle --version and --help load only argparse and the providers' table; "
    "each command imports its own module, a stop's or a bug's line what it prints",
    ("commands", "treadle.entrypoints.changes"): "the checkpoints only for undo, redo and diff",
    ("commands", "treadle.entrypoints.project_context"): "the MCP client only for mcp and context",
    ("project_context", "treadle.adapters.mcp"): "the SDK's OAuth client only to sign in or out",
    ("project_context", "webbrowser"): "a browser only when a sign-in opens one",
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
    ("session", "treadle.domain.rules.resume"): "the rules of continuing a session only "
    "when one is continued (NOT_BEFORE_FIRST_REQUEST)",
    ("session", "treadle.entrypoints.interactive"): "blessed only for an interactive session",
    ("session", "treadle.entrypoints.worktrees"): "git worktrees only with --worktree",
    ("session", "treadle.entrypoints.workflows"): "the same as the container: only for "
    "--command, once the session has started",
    ("workflows", "treadle.adapters.tools.skill"): "the skill tool only when there is a skill",
    ("hooks", "treadle.adapters.workflows.hooks"): "the hooks' adapter only when a hook is set",
    ("hooks", "treadle.adapters.terminal.notify"): "the bell only when notify is not false",
    ("hooks", "treadle.domain.rules.hooks"): "the hooks' table and rules only when a file "
    "sets hooks (a session with none loads none of their value classes)",
    ("hooks", "treadle.domain.values.hook_table"): "the same",
    ("config_check", "treadle.domain.rules.hooks"): "the hooks' rules only when a file sets "
    "[hooks]",
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
    ("batch", "treadle.entrypoints.session"): "treadle batch --help and a bad flag are "
    "answered by argparse before a session's modules load",
    ("batch", "treadle.adapters.batch.results_file"): "the same",
    ("batch", "treadle.adapters.transcript.sessions"): "the session store once TASKS and the flags "
    "are read, to check the sessions the lines continue",
    ("batch", "treadle.adapters.secrets.redact"): "the container, its log and every adapter only "
    "once TASKS, the configuration and RESULTS are found good (nothing runs otherwise)",
    ("batch", "treadle.adapters.transcript.session_log"): "the same",
    ("batch", "treadle.entrypoints.container"): "the same",
    ("batch", "treadle.entrypoints.injector"): "the same",
    ("batch", "treadle.adapters.worktrees"): "git's worktrees only for batch --worktree",
    ("batch", "treadle.entrypoints.worktrees"): "the same",
}
"""Every function-level import of the entrypoints, with its reason."""

NOT_BEFORE_FIRST_REQUEST: dict[str, str] = {
    "treadle.adapters.sandbox": (
        "the sandbox is made in the turn start's thread (its warning), while the first "
        "request is out, or by the first command (wiring.build_sandbox)"
    ),
    "treadle.adapters.checkpoints": (
        "the first checkpoint is recorded in the turn start's thread, while the first "
        "request is out (wiring.build_turn_start)"
    ),
    "treadle.adapters.process": "the runner is made by the first command (RunnerOnFirstCommand)",
    "treadle.adapters.mcp": "the MCP client, only when servers are configured",
    "treadle.adapters.blessed_terminal": "the full-screen display, on a terminal only",
    "treadle.adapters.batch": "treadle batch only",
    "treadle.adapters.acp": "treadle acp only",
    "treadle.adapters.worktrees": "git's worktrees, once --worktree or a sub-agent asks",
    "treadle.domain.rules.resume": "continuing a session (--resume, a transcript to read)",
    "treadle.domain.rules.resumed_view": "showing a continued session's past",
    "wcwidth": "word wrap, for --print on a terminal only (plain_terminal)",
    "platform": "the kernel's version, asked by the sandbox's Landlock probe",
    "blessed": "the full-screen display, on a terminal only",
    "pygments": "highlighting, in the full-screen display only",
    "markdown_it": "markdown, in the full-screen display only",
    "yaml": "hidden from dependency-injector (entrypoints.injector); skills' front matter",
    "pydantic": "hidden from dependency-injector (entrypoints.injector); the MCP SDK",
    "mcp": "the MCP SDK, only when servers are configured",
    "ray": "treadle batch on Ray only",
}
"""Module (or package) name → why the first request goes out without it."""
