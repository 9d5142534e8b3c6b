#!/usr/bin/python3
"""The agent's IPython profile (guest-agent/interpreter/resources/python) inside a real kernel.

Starts Debian's ipykernel with IPYTHONDIR = a copy of that directory (IPython writes log/, pid/,
security/ and a README into its profile, which must not land in the source tree) and checks the
MIME bundles E2B's clients read: e2b/data, application/json, e2b/chart with image/png, PIL
images, and plain-text tracebacks. Needs python3-ipykernel, python3-jupyter-client,
python3-matplotlib, python3-pandas and python3-pil (tools/deps.sh).
"""
import os
import shutil
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILE_SOURCE = os.path.join(HERE, "..", "..", "..", "guest-agent", "interpreter", "resources", "python")


class Kernel:
    def __init__(self, ipython_dir, scratch):
        from jupyter_client import KernelManager

        env = dict(os.environ)
        for name in ("MPLCONFIGDIR", "MPLBACKEND", "MATPLOTLIBRC", "PYTHONPATH", "PYTHONSTARTUP"):
            env.pop(name, None)
        env["IPYTHONDIR"] = ipython_dir
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        # An unusable default config dir (a path through a regular file fails even for root): the
        # profile must move matplotlib's config dir under IPYTHONDIR.
        blocker = os.path.join(scratch, "not-a-dir")
        open(blocker, "w").close()
        env["XDG_CONFIG_HOME"] = os.path.join(blocker, "config")
        self.manager = KernelManager(kernel_name="python3")
        started = time.monotonic()
        self.manager.start_kernel(env=env, cwd=scratch)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.startup_seconds = time.monotonic() - started

    def run(self, code, timeout=60):
        """iopub messages of one execution (execute_input .. before idle)."""
        msg_id = self.client.execute(code)
        messages = []
        deadline = time.monotonic() + timeout
        while True:
            msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages
            messages.append(msg)

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def bundles(messages, msg_type=None):
    return [m["content"]["data"] for m in messages
            if m["msg_type"] in ("execute_result", "display_data") and msg_type in (None, m["msg_type"])]


def stream(messages, name):
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream" and m["content"]["name"] == name)


def errors(messages):
    return [m["content"] for m in messages if m["msg_type"] == "error"]


class PythonStartupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp(prefix="cove-python-startup-")
        os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(cls.scratch, "jupyter-runtime")
        os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy warns otherwise
        cls.ipython_dir = os.path.join(cls.scratch, "ipython")
        shutil.copytree(PROFILE_SOURCE, cls.ipython_dir, ignore=shutil.ignore_patterns("__pycache__"))
        cls.kernel = Kernel(cls.ipython_dir, cls.scratch)
        # Before any test imports them: what the kernel holds right after its startup files ran.
        cls.after_startup = stream(cls.kernel.run(
            "import sys, os\n"
            "print(sorted(m for m in ('pandas', 'matplotlib', 'PIL', 'numpy') if m in sys.modules))\n"
            "print(sorted(k for k in globals() if 'cove' in k.lower()))\n"
            "print(os.environ.get('PYDEVD_DISABLE_FILE_VALIDATION'))"), "stdout")

    @classmethod
    def tearDownClass(cls):
        cls.kernel.close()
        for _ in range(10):  # the dying kernel may still be writing into its profile
            shutil.rmtree(cls.scratch, ignore_errors=True)
            if not os.path.exists(cls.scratch):
                break
            time.sleep(0.1)

    def run_ok(self, code):
        messages = self.kernel.run(code)
        self.assertEqual(errors(messages), [], code)
        return messages

    def chart_bundle(self, code):
        """The one figure display of `code`: its bundle, with png and no stderr."""
        messages = self.run_ok("import matplotlib.pyplot as plt\nimport numpy as np\n" + code)
        self.assertEqual(stream(messages, "stderr"), "")
        figures = [b for b in bundles(messages, "display_data") if "image/png" in b]
        self.assertEqual(len(figures), 1, [list(b) for b in bundles(messages)])
        return figures[0]

    # --- startup -----------------------------------------------------------------------------

    def test_startup_is_lazy_fast_and_leaves_no_names(self):
        self.assertLess(self.kernel.startup_seconds, 20)
        self.assertEqual(self.after_startup, "[]\n[]\n1\n")

    def test_matplotlib_imports_quietly_with_config_dir_under_ipython_dir(self):
        messages = self.run_ok("import os, matplotlib.pyplot\nprint(os.environ.get('MPLCONFIGDIR'))")
        self.assertEqual(stream(messages, "stderr"), "")
        self.assertEqual(stream(messages, "stdout").strip(), os.path.join(self.ipython_dir, "matplotlib"))

    def test_history_is_kept_in_memory(self):
        self.run_ok("history_marker = 41")
        messages = self.run_ok("%history")
        self.assertIn("history_marker = 41", stream(messages, "stdout"))
        self.assertFalse(os.path.exists(os.path.join(self.ipython_dir, "profile_default", "history.sqlite")))

    def test_traceback_has_no_colours(self):
        messages = self.kernel.run("1 / 0")
        [error] = errors(messages)
        self.assertEqual(error["ename"], "ZeroDivisionError")
        self.assertIn("ZeroDivisionError", "".join(error["traceback"]))
        self.assertNotIn("\x1b[", "".join(error["traceback"]))

    def test_long_sequences_are_not_truncated(self):
        [result] = bundles(self.run_ok("list(range(1500))"))
        self.assertTrue(result["text/plain"].replace("\n", "").endswith("1498, 1499]"))
        self.assertNotIn("...", result["text/plain"])

    # --- data and json -----------------------------------------------------------------------

    def test_dataframe_gives_data_and_html(self):
        [result] = bundles(self.run_ok(
            "import pandas as pd, numpy as np\n"
            "pd.DataFrame({'a': [1, 2, 3], 'f': [1.5, np.nan, 2.0],"
            " 't': pd.to_datetime(['2023-09-01', '2023-09-02 12:30', None]), 7: ['x', 'y', 'z']})"), "execute_result")
        self.assertIn("text/html", result)
        self.assertEqual(result["e2b/data"], {
            "a": [1, 2, 3],
            "f": [1.5, None, 2.0],
            "t": ["2023-09-01T00:00:00", "2023-09-02T12:30:00", None],
            "7": ["x", "y", "z"],
        })

    def test_list_and_dict_results_give_json(self):
        [result] = bundles(self.run_ok("[1, 2]"), "execute_result")
        self.assertEqual(result["text/plain"], "[1, 2]")
        self.assertEqual(result["application/json"], [1, 2])
        [result] = bundles(self.run_ok(
            "import numpy as np, datetime\n"
            "{'n': np.int64(3), 1: [np.float32(0.5), float('nan')], 'd': datetime.date(2024, 1, 2), 'a': np.arange(2)}"))
        self.assertEqual(result["application/json"], {"n": 3, "1": [0.5, None], "d": "2024-01-02", "a": [0, 1]})

    def test_non_json_results_give_no_json(self):
        for code in ("[object()]", "{(1, 2): 3}", "'text'", "(1, 2)", "42"):
            [result] = bundles(self.run_ok(code))
            self.assertIn("text/plain", result, code)
            self.assertNotIn("application/json", result, code)

    # --- charts ------------------------------------------------------------------------------

    def test_line_chart(self):
        bundle = self.chart_bundle(
            "x = np.linspace(0, 2 * np.pi, 100)\n"
            "plt.figure(figsize=(10, 6))\n"
            "plt.plot(x, np.sin(x), label='sin(x)')\n"
            "plt.plot(x, np.cos(x), label='cos(x)')\n"
            "plt.xlabel('Time (s)')\nplt.ylabel('Amplitude (Hz)')\nplt.title('Plot of sin(x) and cos(x)')\n"
            "plt.show()")
        chart = bundle["e2b/chart"]
        self.assertEqual(chart["type"], "line")
        self.assertEqual(chart["title"], "Plot of sin(x) and cos(x)")
        self.assertEqual((chart["x_label"], chart["y_label"]), ("Time (s)", "Amplitude (Hz)"))
        self.assertEqual((chart["x_unit"], chart["y_unit"]), ("s", "Hz"))
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("linear", "linear"))
        self.assertTrue(chart["x_ticks"] and all(isinstance(t, float) for t in chart["x_ticks"] + chart["y_ticks"]))
        self.assertEqual(len(chart["x_ticks"]), len(chart["x_tick_labels"]))
        self.assertTrue(all(isinstance(t, str) for t in chart["x_tick_labels"] + chart["y_tick_labels"]))
        self.assertEqual([e["label"] for e in chart["elements"]], ["sin(x)", "cos(x)"])
        sin = chart["elements"][0]["points"]
        self.assertEqual(len(sin), 100)
        self.assertEqual(sin[0], [0.0, 0.0])
        self.assertAlmostEqual(sin[25][1], np.sin(2 * np.pi * 25 / 99))

    def test_datetime_line_chart_and_implicit_flush(self):
        # No plt.show(): the inline backend displays the figure when the cell ends.
        bundle = self.chart_bundle(
            "import datetime\n"
            "dates = [datetime.date(2023, 9, 1) + datetime.timedelta(days=i) for i in range(10)]\n"
            "plt.plot(dates, range(10), label='days')\n"
            "plt.xlabel('Date')")
        chart = bundle["e2b/chart"]
        self.assertEqual(chart["type"], "line")
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("datetime", "linear"))
        self.assertIsNone(chart["title"])
        self.assertIsNone(chart["y_label"])
        self.assertIsNone(chart["x_unit"])
        points = chart["elements"][0]["points"]
        self.assertEqual(points[0], ["2023-09-01T00:00:00+00:00", 0.0])
        self.assertEqual(points[9], ["2023-09-10T00:00:00+00:00", 9.0])
        self.assertTrue(chart["x_ticks"] and all(t.startswith("2023-09") for t in chart["x_ticks"]))

    def test_categorical_axis(self):
        chart = self.chart_bundle("plt.plot([1, 2, 3], ['A', 'B', 'C'])\nplt.show()")["e2b/chart"]
        self.assertEqual((chart["x_scale"], chart["y_scale"]), ("linear", "categorical"))
        self.assertEqual(chart["elements"][0]["points"], [[1.0, "A"], [2.0, "B"], [3.0, "C"]])
        self.assertEqual(chart["y_tick_labels"], ["A", "B", "C"])

    def test_scatter_chart(self):
        chart = self.chart_bundle(
            "plt.xlabel('A')\nplt.ylabel('B')\n"
            "plt.scatter(np.arange(5), np.arange(5) * 2, label='Dataset 1')\n"
            "plt.scatter(np.arange(10), np.ones(10), label='Dataset 2')\n"
            "plt.show()")["e2b/chart"]
        self.assertEqual(chart["type"], "scatter")
        self.assertIsNone(chart["title"])
        self.assertEqual((chart["x_label"], chart["y_label"]), ("A", "B"))
        self.assertEqual([e["label"] for e in chart["elements"]], ["Dataset 1", "Dataset 2"])
        self.assertEqual(chart["elements"][0]["points"], [[float(i), 2.0 * i] for i in range(5)])
        self.assertEqual(len(chart["elements"][1]["points"]), 10)

    def test_bar_chart(self):
        chart = self.chart_bundle(
            "plt.figure(figsize=(10, 6))\n"
            "plt.bar(['Author A', 'Author B', 'Author C', 'Author D'], [100, 200, 300, 400], label='sales')\n"
            "plt.xlabel('Authors')\nplt.ylabel('Number of Books Sold')\nplt.title('Book Sales by Authors')\n"
            "plt.tight_layout()\nplt.show()")["e2b/chart"]
        self.assertEqual(chart["type"], "bar")
        self.assertEqual(chart["title"], "Book Sales by Authors")
        self.assertEqual((chart["x_label"], chart["y_label"]), ("Authors", "Number of Books Sold"))
        self.assertEqual((chart["x_unit"], chart["y_unit"]), (None, None))
        self.assertEqual(chart["elements"], [
            {"label": f"Author {c}", "group": "sales", "value": v}
            for c, v in zip("ABCD", (100, 200, 300, 400))
        ])

    def test_grouped_bars_take_their_tick_label(self):
        chart = self.chart_bundle(
            "fig, ax = plt.subplots()\nx = np.arange(2)\n"
            "ax.bar(x - 0.2, [1, 2], 0.4, label='men')\nax.bar(x + 0.2, [3, 4], 0.4, label='women')\n"
            "ax.set_xticks(x, ['G1', 'G2'])\nplt.show()")["e2b/chart"]
        self.assertEqual([(e["label"], e["group"], e["value"]) for e in chart["elements"]],
                         [("G1", "men", 1), ("G2", "men", 2), ("G1", "women", 3), ("G2", "women", 4)])

    def test_pie_chart(self):
        chart = self.chart_bundle(
            "fig, ax = plt.subplots(figsize=(8, 8))\nplt.xlabel('x')\n"
            "ax.pie([90, 10], labels=['No', 'No, in blue'], autopct='%1.1f%%', startangle=90)\n"
            "ax.axis('equal')\nplt.title('Will I wake up early tomorrow?')\nplt.show()")["e2b/chart"]
        self.assertEqual(chart, {
            "type": "pie",
            "title": "Will I wake up early tomorrow?",
            "elements": [
                {"label": "No", "angle": 324.0, "radius": 1.0},
                {"label": "No, in blue", "angle": 36.0, "radius": 1.0},
            ],
        })

    def test_box_and_whisker_chart(self):
        chart = self.chart_bundle(
            "data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87],"
            " 'Class C': [75, 82, 88, 79, 86]}\n"
            "fig, ax = plt.subplots()\nax.set_title('Exam Scores Distribution')\n"
            "ax.set_xlabel('Class')\nax.set_ylabel('Score')\n"
            "ax.boxplot(data.values(), labels=data.keys())\n"
            "ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)\nplt.show()")["e2b/chart"]
        self.assertEqual(chart["type"], "box_and_whisker")
        self.assertEqual(chart["title"], "Exam Scores Distribution")
        self.assertEqual((chart["x_label"], chart["y_label"], chart["x_unit"]), ("Class", "Score", None))
        boxes = chart["elements"]
        self.assertEqual([b["label"] for b in boxes], ["Class A", "Class B", "Class C"])
        self.assertEqual([b["min"] for b in boxes], [78, 84, 75])
        self.assertEqual([b["first_quartile"] for b in boxes], [85, 84.75, 79])
        self.assertEqual([b["median"] for b in boxes], [88, 88, 82])
        self.assertEqual([b["third_quartile"] for b in boxes], [90, 90.5, 86])
        self.assertEqual([b["max"] for b in boxes], [92, 95, 88])
        self.assertEqual([b["outliers"] for b in boxes], [[], [76], []])

    def test_superchart(self):
        chart = self.chart_bundle(
            "fig, axs = plt.subplots(1, 2)\nfig.suptitle('Multiple Charts')\n"
            "axs[0].plot(np.arange(100), np.arange(100))\naxs[0].set_title('Line')\n"
            "axs[1].scatter([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])\naxs[1].set_xlabel('X')\naxs[1].set_title('Dots')\n"
            "plt.show()")["e2b/chart"]
        self.assertEqual((chart["type"], chart["title"]), ("superchart", "Multiple Charts"))
        line, dots = chart["elements"]
        self.assertEqual((line["type"], line["title"], line["x_label"]), ("line", "Line", None))
        self.assertEqual(len(line["elements"][0]["points"]), 100)
        self.assertEqual((dots["type"], dots["title"], dots["x_label"]), ("scatter", "Dots", "X"))
        self.assertEqual(len(dots["elements"][0]["points"]), 5)

    def test_unknown_chart(self):
        chart = self.chart_bundle(
            "fig, ax = plt.subplots()\nax.add_artist(plt.Circle((0, 0), 1, fill=False))\n"
            "plt.title('Circles')\nplt.show()")["e2b/chart"]
        self.assertEqual(chart, {"type": "unknown", "title": "Circles", "elements": []})

    def test_blank_figure_has_no_chart(self):
        # Neither the inline backend nor IPython's png formatter renders a figure without axes.
        messages = self.run_ok("import matplotlib.pyplot as plt\nfig = plt.figure()\ndisplay(fig)\nplt.close(fig)")
        [bundle] = bundles(messages, "display_data")
        self.assertEqual(list(bundle), ["text/plain"])

    def test_extraction_failure_keeps_the_png_without_chart(self):
        bundle = self.chart_bundle(
            "fig, ax = plt.subplots()\nax.plot([1, 2])\n"
            "ax.get_xlabel = lambda: 1 / 0\nplt.show()")
        self.assertNotIn("e2b/chart", bundle)

    # --- PIL ---------------------------------------------------------------------------------

    def test_pil_show_and_save_display_the_image(self):
        path = os.path.join(self.scratch, "red.png")
        messages = self.run_ok(
            "from PIL import Image\nimport io\n"
            "image = Image.new('RGB', (4, 3), 'red')\n"
            "image.show()\n"
            f"image.save({path!r})\n"
            "image.save(io.BytesIO(), 'PNG')\n"
            "Image.new('F', (2, 2)).show()")
        shown = bundles(messages, "display_data")
        self.assertEqual(len(shown), 3, shown)
        self.assertTrue(all("image/png" in b for b in shown))
        self.assertTrue(os.path.exists(path))
        self.assertEqual(stream(messages, "stderr"), "")


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
