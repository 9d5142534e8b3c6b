"""Turns Python values into JSON-safe ones (what Jupyter's message packer accepts).

strict(): for application/json of list and dict results. Anything outside JSON plus NumPy and
dates raises TypeError, so such a result simply gets no json.
lenient(): for e2b/data and e2b/chart. Unknown leaves become their str().
Both map NaN and infinities to None (JSON has no such numbers).
"""
import datetime
import math

_MAX_DEPTH = 200


class _Converter:
    def __init__(self, lenient):
        self.lenient = lenient

    def value(self, v, depth=0):
        if depth > _MAX_DEPTH:
            raise ValueError("nested too deeply")
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            return float(v) if math.isfinite(v) else None
        if isinstance(v, str):
            return str(v)
        if isinstance(v, dict):
            return {self.key(k): self.value(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.value(x, depth + 1) for x in v]
        if _is_missing(v):
            return None
        if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
            return v.isoformat()
        module = type(v).__module__ or ""
        if module == "numpy" or module.startswith("numpy."):
            return self._numpy(v, depth)
        if self.lenient:
            if isinstance(v, (set, frozenset)):
                return [self.value(x, depth + 1) for x in v]
            return str(v)
        raise TypeError(f"{type(v).__name__} is not JSON serializable")

    def _numpy(self, v, depth):
        if type(v).__name__ == "datetime64":
            # tolist() gives a datetime, None (NaT) or, at ns precision, a bare integer.
            plain = v.tolist()
            if plain is None or isinstance(plain, (datetime.date, datetime.datetime)):
                return self.value(plain, depth + 1)
            return str(v)
        if getattr(v, "ndim", 0) > 0 and getattr(getattr(v, "dtype", None), "kind", "") == "M":
            return [self.value(x, depth + 1) for x in v]  # element-wise, as above
        if hasattr(v, "tolist"):  # ndarray and numpy scalars
            plain = v.tolist()
            if type(plain) is not type(v):
                return self.value(plain, depth + 1)
        if self.lenient:
            return str(v)
        raise TypeError(f"{type(v).__name__} is not JSON serializable")

    def key(self, k):
        # The same key spellings as json.dumps, plus dates and NumPy scalars.
        if isinstance(k, str):
            return str(k)
        if k is True:
            return "true"
        if k is False:
            return "false"
        if k is None:
            return "null"
        if isinstance(k, int):
            return str(int(k))
        if isinstance(k, float):
            return float.__repr__(float(k))
        if isinstance(k, (datetime.datetime, datetime.date, datetime.time)):
            return k.isoformat()
        module = type(k).__module__ or ""
        if (module == "numpy" or module.startswith("numpy.")) and hasattr(k, "item"):
            plain = k.item()
            if type(plain) is not type(k):
                return self.key(plain)
        if self.lenient:
            return str(k)
        raise TypeError(f"keys of type {type(k).__name__} are not JSON serializable")


def _is_missing(v):
    # pandas.NaT and pandas.NA, recognised without importing pandas.
    return type(v).__name__ in ("NaTType", "NAType") and (type(v).__module__ or "").startswith("pandas")


_strict = _Converter(lenient=False)
_lenient = _Converter(lenient=True)


def strict(value):
    return _strict.value(value)


def lenient(value):
    return _lenient.value(value)
