"""A matplotlib Figure as E2B chart data (the e2b/chart result key).

Schema (what E2B's SDKs deserialize): every chart has type, title and elements. Charts on x/y
axes add x_label, y_label, x_unit, y_unit; line and scatter charts add x_ticks, x_tick_labels,
x_scale, y_ticks, y_tick_labels, y_scale and elements {label, points: [[x, y], ...]}. Bar
elements are {label, group, value}, pie elements {label, angle, radius}, box elements {label,
min, first_quartile, median, third_quartile, max, outliers}. A figure with several charts is a
superchart whose elements are charts. Absent values are None (the clients index the keys).

Imported on the first figure display, when matplotlib is already loaded.
"""
import math
import re

import numpy as np
from matplotlib import category
from matplotlib import dates as mdates
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.patches import Wedge

_SCALES = {"linear", "log", "symlog", "logit", "function", "functionlog", "asinh"}
# A unit is a trailing "(unit)" or "[unit]" after a space: "Time (s)" -> "s"; "f(x)" has none.
_UNIT = re.compile(r"\s[(\[]([^()\[\]]+)[)\]]\s*$")


def figure_to_chart(fig):
    """The figure's chart dict, or None for a figure that shows nothing."""
    charts = []
    for ax in fig.get_axes():
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        chart = axes_to_chart(ax)
        if chart is not None:
            charts.append(chart)
    if not charts:
        return None
    suptitle = _text(getattr(fig, "_suptitle", None))
    if len(charts) == 1:
        chart = charts[0]
        if chart["title"] is None:
            chart["title"] = suptitle
        return chart
    return {"type": "superchart", "title": suptitle, "elements": charts}


def axes_to_chart(ax):
    wedges = [p for p in ax.patches if isinstance(p, Wedge)]
    if wedges:
        return _pie(ax, wedges)
    bars = [c for c in ax.containers if isinstance(c, BarContainer) and len(c.patches)]
    if bars:
        return _bar(ax, bars)
    boxes = _boxes(ax)
    if boxes:
        return dict(_chart_2d(ax, "box_and_whisker"), elements=boxes)
    lines = _data_lines(ax)
    scatters = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets())]
    if lines:
        return _points(ax, "line", lines + scatters)
    if scatters:
        return _points(ax, "scatter", scatters)
    if ax.xaxis.have_units() or ax.yaxis.have_units():
        # Data was set up for these axes but nothing drawn (e.g. plot() raised on mismatched
        # shapes after converting the dates): an empty point chart, as E2B reports it.
        return _points(ax, "line", [])
    if _title(ax) or ax.get_xlabel() or ax.get_ylabel() or ax.patches or ax.artists or ax.collections \
            or ax.images or ax.texts or ax.lines:
        return {"type": "unknown", "title": _title(ax), "elements": []}
    return None


# --- chart kinds -------------------------------------------------------------------------


def _chart_2d(ax, kind):
    x_label = ax.get_xlabel() or None
    y_label = ax.get_ylabel() or None
    return {
        "type": kind,
        "title": _title(ax),
        "x_label": x_label,
        "y_label": y_label,
        "x_unit": _unit(x_label),
        "y_unit": _unit(y_label),
        "elements": [],
    }


def _points(ax, kind, artists):
    x_kind, y_kind = _kind(ax.xaxis), _kind(ax.yaxis)
    chart = _chart_2d(ax, kind)
    x_ticks, x_tick_labels = _ticks(ax.xaxis, x_kind)
    y_ticks, y_tick_labels = _ticks(ax.yaxis, y_kind)
    chart.update(
        x_ticks=x_ticks,
        x_tick_labels=x_tick_labels,
        x_scale=_scale(ax.get_xscale(), x_kind),
        y_ticks=y_ticks,
        y_tick_labels=y_tick_labels,
        y_scale=_scale(ax.get_yscale(), y_kind),
    )
    for artist in artists:
        xy = artist.get_offsets() if isinstance(artist, PathCollection) else artist.get_xydata()
        xy = np.ma.filled(np.ma.asarray(xy, dtype=float), np.nan).reshape(-1, 2)
        points = [[_coord(x, x_kind, ax.xaxis), _coord(y, y_kind, ax.yaxis)] for x, y in xy]
        chart["elements"].append({"label": str(artist.get_label()), "points": points})
    return chart


def _bar(ax, containers):
    chart = _chart_2d(ax, "bar")
    for container in containers:
        horizontal = getattr(container, "orientation", None) == "horizontal"
        axis = ax.yaxis if horizontal else ax.xaxis
        values = getattr(container, "datavalues", None)
        ticks = _tick_positions(axis)
        for i, rect in enumerate(container.patches):
            if horizontal:
                start, extent, value = rect.get_y(), rect.get_height(), rect.get_width()
            else:
                start, extent, value = rect.get_x(), rect.get_width(), rect.get_height()
            if values is not None and i < len(values):
                value = values[i]
            chart["elements"].append({
                "label": _bar_label(axis, ticks, start + extent / 2, abs(extent)),
                "group": str(container.get_label()),
                "value": _number(value),
            })
    return chart


def _pie(ax, wedges):
    elements = [
        {
            "label": str(w.get_label()),
            # Wedge angles carry float32-level noise: 90 % of a pie is 324 degrees, not 323.99999.
            "angle": _float(round(abs(w.theta2 - w.theta1), 4)),
            "radius": _float(w.r),
        }
        for w in wedges
    ]
    return {"type": "pie", "title": _title(ax), "elements": elements}


def _boxes(ax):
    by_position = {}  # a later boxplot at the same position replaces the earlier one
    for record in ax.__dict__.get("_cove_boxplots", []):
        medians = record["artists"].get("medians", [])
        stats = record["stats"]
        positions = record["positions"]
        if positions is None:
            positions = range(1, len(stats) + 1)
        for i, (st, position) in enumerate(zip(stats, positions)):
            if i < len(medians) and medians[i] not in ax.lines:
                continue  # removed since (ax.clear(), artist.remove())
            label = st.get("label")
            by_position[float(position)] = {
                "label": str(label) if label is not None else _format_number(position),
                "min": _float(st["whislo"]),
                "first_quartile": _float(st["q1"]),
                "median": _float(st["med"]),
                "third_quartile": _float(st["q3"]),
                "max": _float(st["whishi"]),
                "outliers": [_float(v) for v in np.ravel(st.get("fliers", []))],
            }
    return list(by_position.values())


# --- helpers -----------------------------------------------------------------------------


def _data_lines(ax):
    # Error bar caps are markers drawn as lines; they are not data series.
    caps = set()
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer) and len(container.lines) > 1:
            caps.update(id(line) for line in container.lines[1] or ())
    return [
        line for line in ax.get_lines()
        if line.get_visible() and id(line) not in caps and len(line.get_xydata())
    ]


def _kind(axis):
    if isinstance(axis.get_major_locator(), mdates.DateLocator) or isinstance(
        axis.get_major_formatter(), (mdates.DateFormatter, mdates.AutoDateFormatter, mdates.ConciseDateFormatter)
    ):
        return "datetime"
    if isinstance(axis.units, category.UnitData) or isinstance(axis.converter, category.StrCategoryConverter):
        return "categorical"
    return "number"


def _scale(name, kind):
    if kind in ("datetime", "categorical"):
        return kind
    return name if name in _SCALES else "unknown"


def _ticks(axis, kind):
    """Major tick positions inside the view and their labels, as matplotlib would draw them."""
    pairs = _tick_positions(axis)
    ticks = [_coord(loc, "number" if kind == "categorical" else kind, axis) for loc, _ in pairs]
    return ticks, [label for _, label in pairs]


def _tick_positions(axis):
    locs = [float(v) for v in axis.get_majorticklocs()]
    # Format every tick first: FixedFormatter labels go by position in the full list.
    labels = [str(s) for s in axis.get_major_formatter().format_ticks(locs)]
    lo, hi = sorted(float(v) for v in axis.get_view_interval())
    eps = (hi - lo) * 1e-9
    return [(loc, label) for loc, label in zip(locs, labels) if lo - eps <= loc <= hi + eps]


def _bar_label(axis, ticks, center, extent):
    # The label of the tick under the bar (grouped bars sit beside their tick), else its category
    # or position.
    near = [(abs(loc - center), label) for loc, label in ticks if abs(loc - center) <= extent + 1e-9]
    if near:
        return min(near, key=lambda pair: pair[0])[1]
    name = _category(axis, center)
    return name if name is not None else _format_number(center)


def _coord(value, kind, axis):
    value = float(value)
    if not math.isfinite(value):
        return None
    if kind == "datetime":
        try:
            return mdates.num2date(value).isoformat()
        except (ValueError, OverflowError):
            return value
    if kind == "categorical":
        name = _category(axis, value)
        return name if name is not None else value
    return value


def _category(axis, value):
    units = axis.units
    mapping = getattr(units, "_mapping", None) if isinstance(units, category.UnitData) else None
    if not mapping:
        return None
    for name, index in mapping.items():
        if index == round(value):
            return str(name)
    return None


def _number(value):
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _float(value):
    value = float(value)
    return value if math.isfinite(value) else None


def _format_number(value):
    return format(float(value), "g")


def _title(ax):
    for loc in ("center", "left", "right"):
        title = ax.get_title(loc)
        if title:
            return title
    return None


def _text(artist):
    text = artist.get_text() if artist is not None else ""
    return text or None


def _unit(label):
    match = _UNIT.search(label) if label else None
    return match.group(1).strip() if match else None
