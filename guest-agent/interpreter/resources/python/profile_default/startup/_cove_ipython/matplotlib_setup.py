"""matplotlib in the kernel: a writable config dir, no font-cache chatter, and a record of each
boxplot's statistics for the chart extractor. Nothing here imports matplotlib."""
import functools
import logging
import os

from . import import_hooks


def install(shell):
    _ensure_config_dir(shell)
    logging.getLogger("matplotlib.font_manager").addFilter(_quiet_font_cache)
    import_hooks.on_import("matplotlib.axes._axes", _record_boxplots)


def _ensure_config_dir(shell):
    # matplotlib keeps its font cache in its config dir. When the default one (under $HOME) cannot
    # be written it falls back to a fresh temporary dir with a warning on every kernel start, and
    # rebuilds the font cache each time. Use a dir under IPYTHONDIR (the agent's runtime dir,
    # shared by its kernels) instead. An explicit MPLCONFIGDIR wins.
    if os.environ.get("MPLCONFIGDIR"):
        return
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    default = os.path.join(base, "matplotlib")
    try:
        os.makedirs(default, exist_ok=True)
        if os.access(default, os.W_OK):
            return
    except OSError:
        pass
    fallback = os.path.join(shell.ipython_dir, "matplotlib")
    try:
        os.makedirs(fallback, exist_ok=True)
        os.environ["MPLCONFIGDIR"] = fallback
    except OSError:
        pass


def _quiet_font_cache(record):
    # The one-off "Matplotlib is building the font cache" warning would land in the user's stderr.
    return not str(record.msg).startswith("Matplotlib is building the font cache")


def _record_boxplots(axes_module):
    # matplotlib keeps no trace of which lines form a boxplot; Axes.bxp receives the statistics,
    # so remember them (with the artists, to notice removal) on the Axes.
    cls = axes_module.Axes
    original = cls.bxp
    if getattr(original, "_cove_wrapped", False):
        return

    @functools.wraps(original)
    def bxp(self, *args, **kwargs):
        artists = original(self, *args, **kwargs)
        try:
            stats = args[0] if args else kwargs.get("bxpstats")
            positions = args[1] if len(args) > 1 else kwargs.get("positions")
            vert = args[3] if len(args) > 3 else kwargs.get("vert", True)
            records = self.__dict__.setdefault("_cove_boxplots", [])
            records.append({"stats": list(stats), "positions": positions, "vert": vert, "artists": artists})
        except Exception:
            pass
        return artists

    bxp._cove_wrapped = True
    cls.bxp = bxp
