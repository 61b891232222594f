"""What vulture (``make lint``) cannot see used: names called by Qt, watchdog, the standard library
or pytest, fields serialised whole, and code reached only from a string. Vulture reads this file as
code that uses each name; nothing imports it. A name joins the list with the reason it is used."""

# Qt calls these overrides (C++ virtuals), never Python
_.wheelEvent  # keepgui/ui/activity.py, keepgui/ui/graph.py
_.highlightBlock  # QSyntaxHighlighter: keepgui/ui/markdown.py, diffview.py, adapters/iii.py
_.loadResource  # QTextBrowser: keepgui/ui/markdown.py
_.createEditor  # QStyledItemDelegate: keepgui/ui/scores.py
_.updateEditorGeometry  # QStyledItemDelegate: keepgui/ui/scores.py
_.multiData  # QAbstractItemModel: keepgui/ui/memorymodel.py
_.canFetchMore  # QAbstractItemModel, asked by the view as it scrolls: keepgui/ui/inbox.py
_.fetchMore  # the same
_.sourceModel  # QAbstractProxyModel's API: keepgui/ui/memorymodel.py
_.textElideMode  # a QStyleOptionViewItem field Qt reads when it paints: keepgui/ui/problems.py

# watchdog calls its handler's override
_.on_any_event  # keepgui/core/watch.py

# the standard library calls or reads these
_.log_message  # http.server.BaseHTTPRequestHandler: tests/backends/claude/claude_cli.py
_.do_POST  # the same handler
_.do_GET  # the same (tests/backends/codex/codex_cli.py, tests/backends/hermes/hermes_cli.py)
_.protocol_version  # read by http.server: the fake servers speak HTTP/1.1
_.optionxform  # configparser: tests/ui/test_tray.py
_.tempdir  # tempfile.tempdir: tests/conftest.py
trace  # __exit__'s traceback parameter: keepgui/core/fsio.py
tb  # the same: keepgui/backends/iii/store.py
signum  # a signal handler's parameter: tests/reliability/common.py
_writes_waited  # an autouse pytest fixture, run by pytest for every window test: tests/ui/conftest.py
_journal_of_the_session  # an autouse pytest fixture, run by pytest for every test: tests/conftest.py

# fields written out whole (dataclasses.asdict, __dict__), so each is read by name by whoever reads the JSON
_.extraction_enabled  # keepgui/backends/iii/config.py: MemoryConfig, every field of the worker's config
_.extraction_model
_.extraction_window
_.extraction_timeout_ms
_.max_memories_per_turn
_.rule_learning_enabled
_.embedding_model
_.can_edit  # keepgui/backends/nanobot/writes.py: KeepTraits, what `entries --json` reports
_.can_remove
_.can_restore
_.has_dates
_.dates_reason
_.soft_cap
_.compaction_target

# constants the documentation names (the triage's verdicts; the reliability harness's operations)
VERDICTS  # keepgui/backends/nanobot/writes.py
OPS  # tests/reliability/model.py

# pytest: module marks and fixtures asked for by name for their effect
pytestmark
qapp
pruning  # tests/backends/iii/test_recall.py
notes_backend  # tests/ui/test_seam.py, tests/ui/test_welcome.py

# loaded by path into the window process tests/bench/bench_block.py starts (a script in a string)
GuiWatch  # tests/bench/guiwatch.py
_.longest_own

# Never called yet: the detail pane's docstring promises the bank's own fields (Capabilities.fields);
# the memory panel, being rewritten, is to call it. Until then every field is shown.
_.set_fields  # keepgui/ui/detail.py

# read from config.toml only so a malformed value is reported as a problem: Codex injects memory
# whatever they say (tests/backends/codex/test_codex_cli_compare.py proves it against the CLI)
_.generate_memories  # keepgui/backends/codex/layout.py
_.dedicated_tools

# module-level __getattr__ (PEP 562): Python calls it for a name the module lacks
__getattr__  # keepgui/core/source.py: the defaults named there too

# run in a child process by name (keepgui.core.childwork: ChildWorker.call(module, name)), never called here
read_columns  # keepgui/backends/iii/activity.py
hits_columns  # keepgui/core/secrets/detect.py
echo  # tests/core/test_childwork.py
_warm_every_line  # tests/backends/iii/test_warm.py
# the body of every child process: named in the Python it is started with (ChildWorker.child_code)
serve  # keepgui/core/childwork.py
# a pytest fixture named by the tests that use it (pytest.mark.usefixtures)
window_like  # tests/backends/iii/test_warm.py
children  # tests/ui/test_warm_window.py
# a pytest fixture used by every test of its module (autouse)
any_log_goes_to_the_child  # tests/backends/iii/test_activity_child.py
paced  # tests/ui/test_backends_at_scale.py
