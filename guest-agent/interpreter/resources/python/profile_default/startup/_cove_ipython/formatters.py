"""The result formatters E2B's clients read: e2b/data, e2b/chart and application/json.

Types are registered by name (for_type_by_name), so pandas and matplotlib are imported only by
the user's code. A formatter that fails returns None: the result then lacks that key, and the
other keys (text, html, png) are unaffected. IPython would otherwise print the formatter's
traceback into the user's output.
"""
import warnings

from IPython.core.formatters import BaseFormatter
from traitlets import ObjectName, Unicode

from . import jsonable


class DataFormatter(BaseFormatter):
    """e2b/data: a table's columns, {column: [values...]}."""

    format_type = Unicode("e2b/data")
    _return_type = dict
    print_method = ObjectName("_repr_e2b_data_")


class ChartFormatter(BaseFormatter):
    """e2b/chart: what a matplotlib figure shows, as data (see charts.py).

    Figures are recognised by class name here rather than registered: matplotlib-inline removes
    every formatter's Figure entry (select_figure_formats) whenever its backend is configured.
    """

    format_type = Unicode("e2b/chart")
    _return_type = dict
    print_method = ObjectName("_repr_e2b_chart_")

    def __call__(self, obj):
        if self.enabled and _is_figure(obj):
            return figure_chart(obj)
        return super().__call__(obj)


def _is_figure(obj):
    return any(c.__name__ == "Figure" and c.__module__ == "matplotlib.figure" for c in type(obj).__mro__)


def dataframe_data(df):
    try:
        with warnings.catch_warnings():
            # e.g. "columns are not unique, some columns will be omitted"
            warnings.simplefilter("ignore")
            return jsonable.lenient(df.to_dict(orient="list"))
    except Exception:
        return None


def figure_chart(fig):
    try:
        from . import charts

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chart = charts.figure_to_chart(fig)
        return jsonable.lenient(chart) if chart else None
    except Exception:
        return None


def json_result(value):
    try:
        return jsonable.strict(value), {"expanded": True}
    except Exception:
        return None


def _formatter(shell, cls):
    formatters = shell.display_formatter.formatters
    mime = cls.format_type.default_value
    if not isinstance(formatters.get(mime), cls):
        formatters[mime] = cls(parent=shell.display_formatter)
    return formatters[mime]


def install(shell):
    _formatter(shell, DataFormatter).for_type_by_name("pandas.core.frame", "DataFrame", dataframe_data)
    _formatter(shell, ChartFormatter)
    json_formatter = shell.display_formatter.formatters["application/json"]
    json_formatter.for_type(list, json_result)
    json_formatter.for_type(dict, json_result)
