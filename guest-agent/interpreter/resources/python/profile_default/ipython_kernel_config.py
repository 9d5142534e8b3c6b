# IPython kernel configuration for Cove's code interpreter (IPYTHONDIR points at the directory
# above this profile). Matches what E2B's SDKs expect from a python context.
c = get_config()  # noqa: F821 (provided by IPython's config loader)

# Tracebacks travel as plain text in the /execute stream: no ANSI colour codes.
c.InteractiveShell.colors = "NoColor"
# Show whole sequences in text results (the default truncates after 1000 items).
c.PlainTextFormatter.max_seq_length = 0
# History lives in memory only: several kernels share this profile (one SQLite file would be
# contended), the home directory may be read-only, and a sandbox's history has no use after the
# kernel ends. %history still shows the current kernel's inputs.
c.HistoryManager.enabled = False
