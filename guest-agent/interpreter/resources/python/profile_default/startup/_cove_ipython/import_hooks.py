"""Run a function right after a module is first imported, without importing it ourselves.

A meta path finder wraps the loader of the watched modules; the wrapper puts the real loader back
on the module before executing it, so nothing later sees the wrapper.
"""
import importlib.abc
import sys

_pending = {}  # module name -> [callback(module)]


def on_import(name, callback):
    module = sys.modules.get(name)
    if module is not None:
        _run(callback, module)
        return
    _pending.setdefault(name, []).append(callback)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _run(callback, module):
    try:
        callback(module)
    except Exception:
        pass  # a failed hook must never break the user's import


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = self._inner
        module.__loader__ = self._inner
        self._inner.exec_module(module)
        # Only after a successful import: a failed one is retried through this hook.
        for callback in _pending.pop(module.__name__, []):
            _run(callback, module)
