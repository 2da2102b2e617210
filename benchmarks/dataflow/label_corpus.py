"""Build the resource classifier's labelled corpus: real functions of the standard library and of PyPI
packages, each run on this machine and labelled by what it measurably used.

    python benchmarks/dataflow/label_corpus.py [--out mantispy/dataflow/corpus.json] [--new-only CORPUS]

Per function, a driver calls it on prepared data (files in a scratch folder; network functions against
``corpus_servers.py``, run as its own process and pacing its links at 25 MB/s with 2 ms latency, as
two machines would). Measured per call, with the call repeated for at least 0.15 s: CPU time of this
process (all threads), wall time, bytes through read/write system calls (``/proc/self/io`` rchar +
wchar), bytes over the loopback interface (``/proc/net/dev``), and the peak of Python-tracked
allocations (``tracemalloc``, one more call). The label, in this order:

* network: at least 64 KiB over the loopback per call, and at least as many as through files;
* disk: at least 256 KiB per call through files (read/write system calls that are not the loopback's);
* memory: at least 16 MB allocated at peak in the call, and at least 1 GB per CPU second;
* cpu: the rest.

The corpus stores, per function, its name, place, label, measurements and its code features
(``mantispy.dataflow.code_features``), so the classifier trains without the packages installed.
"""

from __future__ import annotations

import _pydecimal
import argparse
import ast
import asyncio
import base64
import bz2
import calendar
import collections
import colorsys
import configparser
import copy
import csv
import dataclasses
import dbm.dumb
import difflib
import email
import email.utils
import filecmp
import fileinput
import fnmatch
import fractions
import functools
import glob
import gzip
import hashlib
import heapq
import hmac
import html
import html.parser
import http.client
import http.server
import inspect
import io
import json
import linecache
import logging
import logging.handlers
import lzma
import mailbox
import mimetypes
import multiprocessing.connection
import os
import pathlib
import plistlib
import pprint
import random
import re
import resource
import shelve
import shlex
import shutil
import smtplib
import socket
import socketserver
import sqlite3
import sqlite3.dump
import statistics
import string
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
import tokenize
import tracemalloc
import urllib.parse
import urllib.request
import wave
import xml.dom.minidom
import xml.etree.ElementTree as ET
import xmlrpc.client
import zipfile
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from mantispy.dataflow.code_features import features_at, module_file  # noqa: E402

MIN_WALL = 0.15
MAX_REPS = 200


@dataclasses.dataclass
class Case:
    """A function and a driver that calls it once."""

    target: object
    driver: object


def _located(fn) -> tuple[str, str, str, int]:
    fn = inspect.unwrap(fn)
    fn = getattr(fn, "__func__", fn)
    if not hasattr(fn, "__code__"):  # a callable object (mistune.html is a Markdown instance)
        fn = type(fn).__call__
    code = fn.__code__
    path = inspect.getsourcefile(fn) or code.co_filename
    if not Path(path).is_file():  # a frozen module (os on 3.11): its source file on sys.path
        path = module_file(fn.__module__) or path
    return fn.__module__, fn.__qualname__, path, code.co_firstlineno


def _io_bytes() -> int:
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["rchar"]) + int(fields["wchar"])


def _loopback_bytes() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[8])  # transmitted bytes: each loopback byte once
    return 0


def measure(driver) -> dict[str, float]:
    """Per-call CPU, wall, file and loopback bytes, and the peak of tracked allocations."""
    driver()
    io0, lo0 = _io_bytes(), _loopback_bytes()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    reps = 0
    while True:
        driver()
        reps += 1
        if time.perf_counter() - t0 >= MIN_WALL or reps >= MAX_REPS:
            break
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    io1, lo1 = _io_bytes(), _loopback_bytes()
    tracemalloc.start()
    driver()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"calls": reps, "cpu_s": cpu / reps, "wall_s": wall / reps, "io_bytes": (io1 - io0) / reps,
            "net_bytes": (lo1 - lo0) / reps, "alloc_peak_bytes": float(peak)}


def label(m: dict[str, float]) -> str:
    """The measured label (rules in the module docstring)."""
    net = m["net_bytes"]
    files = max(0.0, m["io_bytes"] - 2 * net)  # a loopback byte is written by one end and read by the other
    if net >= 65536 and net >= files:
        return "network"
    if files >= 262144:
        return "disk"
    if m["alloc_peak_bytes"] >= 16e6 and m["alloc_peak_bytes"] / max(m["cpu_s"], 1e-6) >= 1e9:
        return "memory"
    return "cpu"


# ------------------------------------------------------------------------------------------ the cases

def cpu_cases(scratch: Path) -> list[Case]:
    g = nx.gnm_random_graph(300, 1500, seed=3)
    text = " ".join(random.Random(1).choice(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]) for _ in range(20000))
    lines = text.split(" ")
    doc = json.dumps([{"id": i, "name": f"n{i}", "tags": ["a", "b"], "score": i * 0.5} for i in range(3000)])
    src = inspect.getsource(textwrap)
    sql = "select a, b, sum(c) from t join u on t.id = u.id where x > 3 group by a, b order by 2 desc; " * 40
    md = ("# Title\n\nSome *emphasis* and `code` and [a link](http://x).\n\n- one\n- two\n\n" * 150)
    c_code = "int f(int a, int b) { int c = a + b; for (int i = 0; i < c; i++) { c += i * 2; } return c; }\n" * 60
    arr = np.random.default_rng(1).standard_normal(200_000)
    frame = pd.DataFrame({"k": np.arange(200_000) % 97, "v": arr, "s": np.arange(200_000).astype(str)})
    xml_text = "<root>" + "".join(f"<item id='{i}'><name>n{i}</name><v>{i}</v></item>" for i in range(3000)) + "</root>"
    html_text = "<html><body>" + "".join(f"<p class='c{i}'>para {i} &amp; <b>bold</b></p>" for i in range(3000)) + "</body></html>"
    ini = "\n".join(f"[s{i}]\nkey = value {i}\nnum = {i}\n" for i in range(800))
    mail = "From: a@b.c\nTo: d@e.f\nSubject: hello\n\n" + text[:20000]
    data_bytes = text.encode()

    class Collector(html.parser.HTMLParser):
        pass

    import markdown
    import mistune
    import sqlparse
    from pycparser import c_parser

    parser = c_parser.CParser()
    cases = [
        Case(nx.pagerank, lambda: nx.pagerank(g)),
        Case(nx.betweenness_centrality, lambda: nx.betweenness_centrality(g, k=40, seed=1)),
        Case(nx.closeness_centrality, lambda: nx.closeness_centrality(g)),
        Case(nx.clustering, lambda: nx.clustering(g)),
        Case(nx.average_clustering, lambda: nx.average_clustering(g)),
        Case(nx.triangles, lambda: nx.triangles(g)),
        Case(nx.core_number, lambda: nx.core_number(g)),
        Case(nx.connected_components, lambda: list(nx.connected_components(g))),
        Case(nx.single_source_shortest_path_length, lambda: nx.single_source_shortest_path_length(g, 0)),
        Case(nx.minimum_spanning_tree, lambda: nx.minimum_spanning_tree(g)),
        Case(nx.greedy_color, lambda: nx.greedy_color(g)),
        Case(nx.degree_centrality, lambda: nx.degree_centrality(g)),
        Case(nx.hits, lambda: nx.hits(g, max_iter=200)),
        Case(nx.k_core, lambda: nx.k_core(g)),
        Case(nx.bridges, lambda: list(nx.bridges(g))),
        Case(nx.articulation_points, lambda: list(nx.articulation_points(g))),
        Case(nx.eccentricity, lambda: nx.eccentricity(g, v=list(g)[:30])),
        Case(nx.transitivity, lambda: nx.transitivity(g)),
        Case(nx.square_clustering, lambda: nx.square_clustering(g, list(g)[:60])),
        Case(nx.harmonic_centrality, lambda: nx.harmonic_centrality(g, nbunch=list(g)[:40])),
        Case(nx.find_cliques, lambda: list(nx.find_cliques(g))),
        Case(nx.cycle_basis, lambda: nx.cycle_basis(g)),
        Case(nx.dfs_edges, lambda: list(nx.dfs_edges(g, 0))),
        Case(nx.bfs_edges, lambda: list(nx.bfs_edges(g, 0))),
        Case(nx.dijkstra_path_length, lambda: nx.dijkstra_path_length(g, 0, 299)),
        Case(nx.degree_assortativity_coefficient, lambda: nx.degree_assortativity_coefficient(g)),
        Case(nx.average_neighbor_degree, lambda: nx.average_neighbor_degree(g)),
        Case(nx.community.louvain_communities, lambda: nx.community.louvain_communities(g, seed=1)),
        Case(nx.community.label_propagation_communities, lambda: list(nx.community.label_propagation_communities(g))),
        Case(nx.maximal_matching, lambda: nx.maximal_matching(g)),
        Case(textwrap.wrap, lambda: textwrap.wrap(text, 60)),
        Case(textwrap.fill, lambda: textwrap.fill(text[:30000], 72)),
        Case(textwrap.dedent, lambda: textwrap.dedent(src)),
        Case(textwrap.indent, lambda: textwrap.indent(src, "    ")),
        Case(difflib.SequenceMatcher.ratio, lambda: difflib.SequenceMatcher(None, lines[:600], lines[300:900]).ratio()),
        Case(difflib.unified_diff, lambda: list(difflib.unified_diff(lines[:2000], lines[100:2100]))),
        Case(difflib.get_close_matches, lambda: difflib.get_close_matches("gamna", lines[:3000])),
        Case(shlex.split, lambda: shlex.split(text[:20000])),
        Case(html.unescape, lambda: html.unescape("&amp;&lt;x&gt;" * 5000)),
        Case(json.dumps, lambda: json.dumps(json.loads(doc), indent=1, sort_keys=True)),
        Case(json.loads, lambda: json.loads(doc)),
        Case(re.sub, lambda: re.sub(r"(a|e)(\w+)", r"\2\1", text)),
        Case(re.findall, lambda: re.findall(r"\b\w{5}\b", text)),
        Case(string.capwords, lambda: string.capwords(text)),
        Case(urllib.parse.urlparse, lambda: [urllib.parse.urlparse(f"http://h{i}.example/p?q={i}#f") for i in range(3000)]),
        Case(urllib.parse.quote, lambda: urllib.parse.quote(text[:40000])),
        Case(urllib.parse.parse_qs, lambda: urllib.parse.parse_qs("&".join(f"k{i}=v{i}" for i in range(4000)))),
        Case(base64.b85encode, lambda: base64.b85encode(data_bytes[:60000])),
        Case(base64.b32encode, lambda: base64.b32encode(data_bytes[:100000])),
        Case(gzip.compress, lambda: gzip.compress(data_bytes, 6)),
        Case(bz2.compress, lambda: bz2.compress(data_bytes)),
        Case(lzma.compress, lambda: lzma.compress(data_bytes[:60000])),
        Case(hmac.digest, lambda: [hmac.digest(b"key", data_bytes[i:i + 64], "sha256") for i in range(3000)]),
        Case(statistics.median, lambda: statistics.median(arr[:50000].tolist())),
        Case(statistics.stdev, lambda: statistics.stdev(arr[:20000].tolist())),
        Case(statistics.quantiles, lambda: statistics.quantiles(arr[:50000].tolist(), n=10)),
        Case(fractions.Fraction.__add__, lambda: sum((fractions.Fraction(1, i) for i in range(1, 400)), fractions.Fraction(0))),
        Case(heapq.nlargest, lambda: heapq.nlargest(50, arr[:50000].tolist())),
        Case(random.Random.shuffle, lambda: random.Random(2).shuffle(list(range(50000)))),
        Case(random.Random.sample, lambda: random.Random(2).sample(range(1_000_000), 20000)),
        Case(ast.parse, lambda: ast.parse(src)),
        Case(ast.dump, lambda: ast.dump(ast.parse(src[:20000]))),
        Case(tokenize.generate_tokens, lambda: list(tokenize.generate_tokens(io.StringIO(src).readline))),
        Case(email.message_from_string, lambda: email.message_from_string(mail)),
        Case(email.utils.parsedate_to_datetime, lambda: [email.utils.parsedate_to_datetime("Tue, 24 Nov 2026 10:00:00 +0000") for _ in range(3000)]),
        Case(xml.dom.minidom.parseString, lambda: xml.dom.minidom.parseString(xml_text)),
        Case(ET.fromstring, lambda: ET.fromstring(xml_text)),
        Case(html.parser.HTMLParser.feed, lambda: Collector().feed(html_text)),
        Case(configparser.ConfigParser.read_string, lambda: configparser.ConfigParser().read_string(ini)),
        Case(csv.DictReader.__next__, lambda: list(csv.DictReader(io.StringIO("a,b,c\n" + "1,2,3\n" * 20000)))),
        Case(colorsys.rgb_to_hls, lambda: [colorsys.rgb_to_hls(i / 3e4, 0.5, 0.2) for i in range(30000)]),
        Case(collections.Counter.most_common, lambda: collections.Counter(lines).most_common(10)),
        Case(sqlparse.format, lambda: sqlparse.format(sql, reindent=True, keyword_case="upper")),
        Case(sqlparse.parse, lambda: sqlparse.parse(sql)),
        Case(sqlparse.split, lambda: sqlparse.split(sql)),
        Case(mistune.html, lambda: mistune.html(md)),
        Case(markdown.markdown, lambda: markdown.markdown(md)),
        Case(c_parser.CParser.parse, lambda: parser.parse(c_code)),
        Case(np.sort, lambda: np.sort(arr)),
        Case(np.unique, lambda: np.unique(np.round(arr, 3))),
        Case(np.percentile, lambda: np.percentile(arr, [5, 50, 95])),
        Case(np.histogram, lambda: np.histogram(arr, bins=200)),
        Case(np.convolve, lambda: np.convolve(arr[:20000], arr[:300])),
        Case(np.polyfit, lambda: np.polyfit(arr[:50000], arr[1:50001], 5)),
        Case(np.linalg.svd, lambda: np.linalg.svd(arr[:90000].reshape(300, 300))),
        Case(np.fft.fft, lambda: np.fft.fft(arr)),
        Case(pd.DataFrame.sort_values, lambda: frame.sort_values("v")),
        Case(pd.Series.value_counts, lambda: frame["k"].value_counts()),
        Case(pd.DataFrame.pivot_table, lambda: frame.pivot_table(index="k", values="v", aggfunc="mean")),
        Case(pd.DataFrame.rank, lambda: frame[["v"]].rank()),
        Case(pd.DataFrame.rolling, lambda: frame["v"].rolling(50).mean()),
    ]
    cases += _cpu_cases_more(lines, arr, md, src)
    return cases


def _cpu_cases_more(lines: list[str], arr, md: str, src: str) -> list[Case]:
    """scipy, scikit-learn and smaller packages, and more of the standard library."""
    import cloudpickle
    import dateutil.parser
    import jinja2
    import msgpack.fallback
    import pygments
    import pygments.formatters
    import pygments.lexers
    import scipy.ndimage
    import scipy.optimize
    import scipy.sparse
    import scipy.sparse.linalg
    import scipy.spatial
    import scipy.spatial.distance
    import scipy.stats
    import sortedcontainers
    import toolz
    import yaml
    from markdown_it import MarkdownIt
    from scipy import interpolate, signal
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(5)
    t = np.linspace(0, 400, 200_000)
    sig = np.sin(t) + 0.3 * np.sin(7.3 * t) + 0.1 * arr
    b, a = signal.butter(4, 0.1)
    img = scipy.ndimage.gaussian_filter(rng.random((500, 500)), 4)
    points = rng.random((20_000, 3))
    tree = scipy.spatial.KDTree(points)
    queries = rng.random((5000, 3))
    n = 100_000
    tridiag = scipy.sparse.diags([-np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csc")
    rhs = rng.random(n)
    x = rng.standard_normal((5000, 20))
    y = (x[:, 0] + 0.5 * x[:, 1] + 0.3 * rng.standard_normal(5000) > 0).astype(int)
    wide = rng.standard_normal((200_000, 5))
    sentences = [" ".join(lines[i:i + 12]) for i in range(0, 20000 - 12, 10)]
    records = [{"id": i, "name": f"item {i}", "tags": ["a", "b", "c"], "price": i * 1.25, "ok": i % 2 == 0} for i in range(3000)]
    yaml_text = yaml.safe_dump(records[:400])
    template_src = ("<table>{% for r in rows %}<tr class='{{ loop.cycle('odd', 'even') }}'><td>{{ r.id }}</td>"
                    "<td>{{ r.name | upper }}</td><td>{{ '%.2f' | format(r.price) }}</td>"
                    "{% if r.ok %}<td>yes</td>{% else %}<td>no</td>{% endif %}"
                    "<td>{{ r.tags | join(', ') }}</td></tr>{% endfor %}</table>") * 3
    env = jinja2.Environment(autoescape=True)
    template = env.from_string(template_src)
    dates = [f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00+01:00" for i in range(1500)]
    keys = rng.permutation(50_000).tolist()
    names = [f"pkg/mod{i}/file_{i % 97}.{('py', 'txt', 'json', 'csv')[i % 4]}" for i in range(20_000)]
    mime_names = [f"file{i}.{('html', 'png', 'tar.gz', 'json', 'mp3', 'pdf', 'xyz')[i % 7]}" for i in range(20_000)]
    patterns = [rf"(?P<w{i}>\b[a-z]{{{i % 7 + 1}}}\d*)\s+(?:alpha|beta{i})[^x]+?$" for i in range(150)]
    greeting = string.Template("Dear $name, your order $order of ${count} items ships on $day.")

    def decimal_sqrt():
        with _pydecimal.localcontext() as ctx:
            ctx.prec = 300
            return [_pydecimal.Decimal(i).sqrt() for i in range(2, 40)]

    def rebuild_re():
        re.purge()
        return [re.compile(p) for p in patterns]

    def sorted_update():
        sl = sortedcontainers.SortedList()
        sl.update(keys)
        return sl

    def sorted_dict():
        d = sortedcontainers.SortedDict()
        for k in keys:
            d[k] = k
        return d

    return [
        Case(signal.lfilter, lambda: signal.lfilter(b, a, sig)),
        Case(signal.find_peaks, lambda: signal.find_peaks(sig, prominence=0.5)),
        Case(signal.savgol_filter, lambda: signal.savgol_filter(sig, 51, 3)),
        Case(signal.welch, lambda: signal.welch(sig, nperseg=1024)),
        Case(signal.fftconvolve, lambda: signal.fftconvolve(sig, sig[:5000], mode="same")),
        Case(scipy.stats.linregress, lambda: scipy.stats.linregress(arr[:100_000], sig[:100_000])),
        Case(scipy.stats.spearmanr, lambda: scipy.stats.spearmanr(arr[:50_000], sig[:50_000])),
        Case(scipy.stats.ttest_ind, lambda: scipy.stats.ttest_ind(arr[:100_000], arr[100_000:])),
        Case(scipy.stats.gaussian_kde.evaluate, lambda: scipy.stats.gaussian_kde(arr[:2000]).evaluate(np.linspace(-3, 3, 2000))),
        Case(scipy.ndimage.gaussian_filter, lambda: scipy.ndimage.gaussian_filter(img, 3)),
        Case(scipy.ndimage.label, lambda: scipy.ndimage.label(img > img.mean())),
        Case(scipy.spatial.distance.pdist, lambda: scipy.spatial.distance.pdist(points[:1500])),
        Case(scipy.spatial.KDTree.query, lambda: tree.query(queries, k=5)),
        Case(scipy.optimize.minimize, lambda: scipy.optimize.minimize(scipy.optimize.rosen, np.full(10, 1.3), method="BFGS")),
        Case(interpolate.CubicSpline.__init__, lambda: interpolate.CubicSpline(t, sig)),
        Case(scipy.sparse.linalg.spsolve, lambda: scipy.sparse.linalg.spsolve(tridiag, rhs)),
        Case(KMeans.fit, lambda: KMeans(n_clusters=8, n_init=1, random_state=0).fit(x)),
        Case(StandardScaler.fit, lambda: StandardScaler().fit(wide)),
        Case(PCA.fit, lambda: PCA(n_components=5).fit(x)),
        Case(LogisticRegression.fit, lambda: LogisticRegression(max_iter=300).fit(x, y)),
        Case(DecisionTreeClassifier.fit, lambda: DecisionTreeClassifier(random_state=0).fit(x, y)),
        Case(TfidfVectorizer.fit_transform, lambda: TfidfVectorizer().fit_transform(sentences)),
        Case(yaml.safe_load, lambda: yaml.safe_load(yaml_text)),
        Case(yaml.dump, lambda: yaml.dump(records[:300])),
        Case(jinja2.Environment.from_string, lambda: env.from_string(template_src)),
        Case(jinja2.Template.render, lambda: template.render(rows=records)),
        Case(pygments.highlight, lambda: pygments.highlight(src[:30000], pygments.lexers.PythonLexer(),
                                                            pygments.formatters.HtmlFormatter())),
        Case(dateutil.parser.parse, lambda: [dateutil.parser.parse(d) for d in dates]),
        Case(sortedcontainers.SortedList.update, sorted_update),
        Case(sortedcontainers.SortedDict.__setitem__, sorted_dict),
        Case(toolz.groupby, lambda: toolz.groupby(len, lines)),
        Case(toolz.frequencies, lambda: toolz.frequencies(lines)),
        Case(cloudpickle.dumps, lambda: cloudpickle.dumps(records)),
        Case(MarkdownIt.render, lambda: MarkdownIt().render(md)),
        Case(msgpack.fallback.Packer.pack, lambda: msgpack.fallback.Packer().pack(records)),
        Case(pprint.pformat, lambda: pprint.pformat(records[:1500])),
        Case(inspect.getsource, lambda: inspect.getsource(difflib)),
        Case(string.Template.substitute, lambda: [greeting.substitute(name=f"n{i}", order=i, count=i % 9, day="Monday")
                                                  for i in range(20_000)]),
        Case(_pydecimal.Decimal.sqrt, decimal_sqrt),
        Case(fnmatch.filter, lambda: [fnmatch.filter(names, p) for p in ("*.py", "pkg/mod1*/*", "*_[0-9].csv")]),
        Case(mimetypes.guess_type, lambda: [mimetypes.guess_type(f) for f in mime_names]),
        Case(plistlib.dumps, lambda: plistlib.dumps({"records": records[:2000]})),
        Case(calendar.HTMLCalendar.formatyear, lambda: [calendar.HTMLCalendar().formatyear(y) for y in range(2000, 2030)]),
        Case(re.compile, rebuild_re),
    ]


def memory_cases(scratch: Path) -> list[Case]:
    n = 4_000_000
    base = np.arange(n, dtype=np.float64)
    frame = pd.DataFrame({"a": base, "b": base * 2, "c": base % 7})
    small = pd.DataFrame({"a": np.arange(100_000), "b": np.arange(100_000) * 0.5})
    nested = [{"k": i, "v": [i, i + 1], "s": "x" * 8} for i in range(20000)]

    @dataclasses.dataclass
    class Record:
        a: int
        b: list
        c: dict

    rec = Record(1, list(range(200_000)), {i: i for i in range(20000)})
    return [
        Case(np.zeros_like, lambda: np.zeros_like(base)),
        Case(np.ones, lambda: np.ones(n)),
        Case(np.full, lambda: np.full(n, 3.0)),
        Case(np.full_like, lambda: np.full_like(base, 7.0)),
        Case(np.ones_like, lambda: np.ones_like(base)),
        Case(np.tile, lambda: np.tile(base[:500_000], 6)),
        Case(np.repeat, lambda: np.repeat(base[:1_000_000], 3)),
        Case(np.pad, lambda: np.pad(base, 1000)),
        Case(np.copy, lambda: np.copy(base)),
        Case(np.stack, lambda: np.stack([base, base])),
        Case(np.vstack, lambda: np.vstack([base, base])),
        Case(np.hstack, lambda: np.hstack([base, base])),
        Case(np.column_stack, lambda: np.column_stack([base[:1_000_000], base[:1_000_000]])),
        Case(np.concatenate, lambda: np.concatenate([base, base])),
        Case(np.array_split, lambda: [a.copy() for a in np.array_split(base, 8)]),
        Case(np.meshgrid, lambda: np.meshgrid(base[:1500], base[:1500])),
        Case(np.indices, lambda: np.indices((1200, 1200))),
        Case(np.identity, lambda: np.identity(1500)),
        Case(np.eye, lambda: np.eye(1500)),
        Case(np.diag, lambda: np.diag(base[:1500])),
        Case(np.kron, lambda: np.kron(np.ones((40, 40)), base[:1000].reshape(20, 50))),
        Case(np.broadcast_to, lambda: np.broadcast_to(base[:1000], (2000, 1000)).copy()),
        Case(np.resize, lambda: np.resize(base[:1_000_000], 3_000_000)),
        Case(np.append, lambda: np.append(base, base[:1_000_000])),
        Case(np.insert, lambda: np.insert(base, 5, base[:100_000])),
        Case(np.ravel, lambda: np.ravel(base.reshape(2000, 2000).T)),
        Case(np.ascontiguousarray, lambda: np.ascontiguousarray(base.reshape(2000, 2000).T)),
        Case(np.flip, lambda: np.flip(base).copy()),
        Case(np.roll, lambda: np.roll(base, 12345)),
        Case(np.where, lambda: np.where(base > 5, base, 0.0)),
        Case(pd.concat, lambda: pd.concat([frame, frame])),
        Case(pd.DataFrame.copy, lambda: frame.copy()),
        Case(pd.DataFrame.reindex, lambda: frame.reindex(np.arange(n + 500_000))),
        Case(pd.DataFrame.assign, lambda: frame.assign(d=1.0)),
        Case(pd.DataFrame.fillna, lambda: frame.fillna(0.0)),
        Case(pd.DataFrame.to_numpy, lambda: frame.to_numpy()),
        Case(pd.DataFrame.melt, lambda: small.melt()),
        Case(pd.DataFrame.stack, lambda: small.stack()),
        Case(pd.DataFrame.astype, lambda: frame.astype("float32")),
        Case(pd.Series.repeat, lambda: small["a"].repeat(10)),
        Case(pd.DataFrame.__init__, lambda: pd.DataFrame({"x": base, "y": base})),
        Case(copy.deepcopy, lambda: copy.deepcopy(nested)),
        Case(dataclasses.asdict, lambda: dataclasses.asdict(rec)),
        Case(dataclasses.replace, lambda: dataclasses.replace(rec, b=list(rec.b))),
        Case(pa.Table.from_pandas, lambda: pa.Table.from_pandas(frame)),
        *_memory_cases_more(base),
    ]


def _memory_cases_more(base) -> list[Case]:
    """Large allocations: numpy, scipy.sparse, pandas and plain Python containers."""
    import scipy.sparse

    square = base.reshape(2000, 2000)
    rng = np.random.default_rng(7)
    sparse_csr = scipy.sparse.random(2000, 2000, density=0.05, format="csr", random_state=1)
    sparse_coo = sparse_csr.tocoo()
    block = scipy.sparse.random(100, 100, density=0.5, format="csr", random_state=2)
    tall = scipy.sparse.random(200_000, 100, density=0.05, format="csr", random_state=3)
    left = pd.DataFrame({"key": rng.permutation(1_000_000), "x": rng.random(1_000_000)})
    right = pd.DataFrame({"key": np.arange(1_000_000), "y": rng.random(1_000_000)})
    colours = pd.Series(rng.choice(["red", "green", "blue", "cyan", "black", "white", "grey", "pink"], 1_000_000))
    listed = pd.DataFrame({"id": np.arange(200_000), "vals": [list(range(i % 5, i % 5 + 10)) for i in range(200_000)]})
    big_list = list(range(3_000_000))
    return [
        Case(np.linspace, lambda: np.linspace(0.0, 1.0, 4_000_000)),
        Case(np.tri, lambda: np.tri(2000)),
        Case(np.tril, lambda: np.tril(square)),
        Case(np.triu, lambda: np.triu(square, 1)),
        Case(np.outer, lambda: np.outer(base[:2000], base[:2000])),
        Case(np.cumsum, lambda: np.cumsum(base)),
        Case(np.clip, lambda: np.clip(base, 10.0, 1000.0)),
        Case(np.diff, lambda: np.diff(base)),
        Case(np.dstack, lambda: np.dstack([square, square])),
        Case(scipy.sparse.csr_matrix.toarray, lambda: sparse_csr.toarray()),
        Case(scipy.sparse.coo_matrix.toarray, lambda: sparse_coo.toarray()),
        Case(scipy.sparse.kron, lambda: scipy.sparse.kron(scipy.sparse.eye(1000), block)),
        Case(scipy.sparse.hstack, lambda: scipy.sparse.hstack([tall, tall], format="csr")),
        Case(pd.merge, lambda: pd.merge(left, right, on="key")),
        Case(pd.get_dummies, lambda: pd.get_dummies(colours)),
        Case(pd.DataFrame.explode, lambda: listed.explode("vals")),
        Case(copy.copy, lambda: copy.copy(big_list)),
        Case(collections.UserList.__init__, lambda: collections.UserList(big_list)),
    ]


def disk_cases(scratch: Path) -> list[Case]:
    blob = scratch / "blob.bin"
    blob.write_bytes(os.urandom(8 * 1024 * 1024))
    tree = scratch / "tree"
    tree.mkdir()
    for i in range(40):
        (tree / f"f{i}.bin").write_bytes(os.urandom(100_000))
    text_file = scratch / "lines.txt"
    text_file.write_text("".join(f"line {i} with some words\n" for i in range(200_000)))
    frame = pd.DataFrame({"a": np.arange(400_000), "b": np.random.default_rng(2).standard_normal(400_000)})
    frame.to_parquet(scratch / "f.parquet")
    frame.to_csv(scratch / "f.csv", index=False)
    frame.to_pickle(scratch / "f.pkl")
    frame.reset_index(drop=True).to_feather(scratch / "f.feather")
    np.save(scratch / "a.npy", frame["b"].to_numpy())
    with tarfile.open(scratch / "t.tar", "w") as tar:
        tar.add(tree, arcname="tree")
    with zipfile.ZipFile(scratch / "z.zip", "w", zipfile.ZIP_STORED) as zf:
        for f in tree.iterdir():
            zf.write(f, f.name)
    shutil.copyfile(blob, scratch / "blob-copy.bin")
    shutil.copytree(tree, scratch / "tree-copy")
    out = scratch / "out"
    out.mkdir()
    counter = iter(range(10**9))

    def fresh(name: str) -> Path:
        return out / f"{name}-{next(counter)}"

    def cleanup_after(fn):
        def run():
            fn()
            for p in out.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        return run

    logger = logging.getLogger("corpus")
    logger.propagate = False
    payload = json.loads(json.dumps({"rows": frame.head(50_000).to_dict("list")}))
    records = [{"a": i, "b": "x" * 20} for i in range(50_000)]
    return [
        Case(shutil.copyfile, cleanup_after(lambda: shutil.copyfile(blob, fresh("copy")))),
        Case(shutil.copy, cleanup_after(lambda: shutil.copy(blob, fresh("copy")))),
        Case(shutil.copy2, cleanup_after(lambda: shutil.copy2(blob, fresh("copy")))),
        Case(shutil.copyfileobj, cleanup_after(lambda: _copyfileobj(blob, fresh("obj")))),
        Case(shutil.copytree, cleanup_after(lambda: shutil.copytree(tree, fresh("tree")))),
        Case(shutil.make_archive, cleanup_after(lambda: shutil.make_archive(str(fresh("arch")), "tar", tree))),
        Case(shutil.unpack_archive, cleanup_after(lambda: shutil.unpack_archive(scratch / "t.tar", fresh("unpack")))),
        Case(tarfile.TarFile.add, cleanup_after(lambda: _tar_add(fresh("t.tar"), tree))),
        Case(tarfile.TarFile.extractall, cleanup_after(lambda: _tar_extract(scratch / "t.tar", fresh("x")))),
        Case(zipfile.ZipFile.write, cleanup_after(lambda: _zip_write(fresh("z.zip"), tree))),
        Case(zipfile.ZipFile.extractall, cleanup_after(lambda: zipfile.ZipFile(scratch / "z.zip").extractall(fresh("zx")))),
        Case(zipfile.ZipFile.read, lambda: [zipfile.ZipFile(scratch / "z.zip").read(n) for n in ("f1.bin", "f2.bin", "f3.bin")]),
        Case(zipfile.ZipFile.writestr, cleanup_after(lambda: _zip_writestr(fresh("w.zip")))),
        Case(pathlib.Path.read_bytes, lambda: blob.read_bytes()),
        Case(pathlib.Path.read_text, lambda: text_file.read_text()),
        Case(pathlib.Path.write_bytes, cleanup_after(lambda: fresh("wb").write_bytes(b"y" * 4_000_000))),
        Case(pathlib.Path.write_text, cleanup_after(lambda: fresh("wt").write_text("z" * 4_000_000))),
        Case(filecmp.cmp, lambda: (filecmp.clear_cache(), filecmp.cmp(blob, scratch / "blob-copy.bin", shallow=False))),
        Case(filecmp.cmpfiles, lambda: (filecmp.clear_cache(), filecmp.cmpfiles(tree, scratch / "tree-copy",
                                                                             [f"f{i}.bin" for i in range(40)], shallow=False))),
        Case(fileinput.input, lambda: sum(1 for _ in fileinput.input(files=[str(text_file)]))),
        Case(linecache.updatecache, lambda: linecache.updatecache(str(text_file))),
        Case(json.dump, cleanup_after(lambda: _json_dump(fresh("j.json"), payload))),
        Case(json.load, lambda: _json_load(scratch / "j-in.json", payload)),
        Case(np.save, cleanup_after(lambda: np.save(fresh("a.npy"), frame["b"].to_numpy()))),
        Case(np.load, lambda: np.load(scratch / "a.npy")),
        Case(np.savez, cleanup_after(lambda: np.savez(fresh("a.npz"), a=frame["b"].to_numpy()))),
        Case(pd.read_csv, lambda: pd.read_csv(scratch / "f.csv")),
        Case(pd.DataFrame.to_csv, cleanup_after(lambda: frame.head(100_000).to_csv(fresh("f.csv")))),
        Case(pd.read_parquet, lambda: pd.read_parquet(scratch / "f.parquet")),
        Case(pd.DataFrame.to_parquet, cleanup_after(lambda: frame.to_parquet(fresh("f.parquet"), compression=None))),
        Case(pd.read_pickle, lambda: pd.read_pickle(scratch / "f.pkl")),
        Case(pd.DataFrame.to_pickle, cleanup_after(lambda: frame.to_pickle(fresh("f.pkl")))),
        Case(pd.read_feather, lambda: pd.read_feather(scratch / "f.feather")),
        Case(pd.DataFrame.to_feather, cleanup_after(lambda: frame.to_feather(fresh("f.feather")))),
        Case(pq.read_table, lambda: pq.read_table(scratch / "f.parquet")),
        Case(pq.write_table, cleanup_after(lambda: pq.write_table(pa.Table.from_pandas(frame), fresh("t.parquet"), compression="none"))),
        Case(shelve.Shelf.__setitem__, cleanup_after(lambda: _shelve(fresh("shelf"), records))),
        Case(dbm.dumb._Database.__setitem__, cleanup_after(lambda: _dbm(fresh("dbm"), records))),
        Case(logging.FileHandler.emit, cleanup_after(lambda: _log_lines(logger, logging.FileHandler(fresh("log.txt"))))),
        Case(mailbox.mbox.add, cleanup_after(lambda: _mbox(fresh("mbox")))),
        Case(wave.Wave_write.writeframes, cleanup_after(lambda: _wave(fresh("w.wav")))),
        Case(gzip.GzipFile.write, cleanup_after(lambda: _gzip_write(fresh("g.gz")))),
        Case(tempfile.SpooledTemporaryFile.write, lambda: _spooled()),
        Case(io.BufferedReader.readinto, lambda: _read_blocks(blob)),
        Case(os.walk, lambda: [sum(len(f) for _, _, f in os.walk(tree)) for _ in range(3)] and _read_tree(tree)),
        Case(glob.glob, lambda: [Path(p).read_bytes() for p in glob.glob(str(tree / "*.bin"))]),
        *_disk_cases_more(scratch, frame, blob, text_file, records, payload, fresh, cleanup_after),
    ]


def _disk_cases_more(scratch: Path, frame, blob: Path, text_file: Path, records, payload, fresh, cleanup_after) -> list[Case]:
    """Files through pyarrow, fsspec, cloudpickle, Whoosh, numpy text files and more of the standard library."""
    import cloudpickle
    import fsspec
    import fsspec.implementations.local
    import fsspec.spec
    import pyarrow.dataset as ds
    import pyarrow.feather as feather
    from whoosh import fields, index

    table = pa.Table.from_pandas(frame)
    ds.write_dataset(table, scratch / "dataset", format="parquet")
    db_path = scratch / "rows.sqlite"
    with sqlite3.connect(db_path) as conn:
        conn.execute("create table rows (id integer primary key, name text, score real)")
        conn.executemany("insert into rows values (?, ?, ?)", ((i, f"name {i}", i * 0.25) for i in range(30_000)))
    conn.close()
    with gzip.open(scratch / "lines.txt.gz", "wb") as fh:
        fh.write(text_file.read_bytes())
    noise = os.urandom(1_000_000)
    with lzma.open(scratch / "noise.xz", "wb", preset=0) as fh:
        fh.write(os.urandom(3_000_000))
    fs = fsspec.filesystem("file")
    grid = np.random.default_rng(4).standard_normal((50_000, 4))
    schema = fields.Schema(title=fields.TEXT(stored=True), body=fields.TEXT, n=fields.NUMERIC(stored=True))
    words = text_file.read_text()[:400_000].split()
    docs = [(f"document {i}", " ".join(words[i * 40:(i + 1) * 40]), i) for i in range(1500)]
    logger = logging.getLogger("corpus-rotating")
    logger.propagate = False

    def parquet_writer(path: Path) -> None:
        with pq.ParquetWriter(path, table.schema, compression="none") as writer:
            for start in range(0, table.num_rows, 100_000):
                writer.write_table(table.slice(start, 100_000))

    def whoosh_index(path: Path) -> None:
        path.mkdir()
        ix = index.create_in(str(path), schema)
        writer = ix.writer()
        for title, body, n in docs:
            writer.add_document(title=title, body=body, n=n)
        writer.commit()

    def csv_rows(path: Path) -> None:
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["a", "b"])
            writer.writeheader()
            writer.writerows(records)

    def plist(path: Path) -> None:
        with open(path, "wb") as fh:
            plistlib.dump(payload, fh)

    def pickle_to(path: Path) -> None:
        with open(path, "wb") as fh:
            cloudpickle.dump(frame, fh)

    def digest() -> str:
        with open(blob, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()

    def dump_sql() -> int:
        conn = sqlite3.connect(db_path)
        try:
            return sum(len(line) for line in conn.iterdump())
        finally:
            conn.close()

    def bz2_write(path: Path) -> None:
        with bz2.open(path, "wb", compresslevel=1) as fh:
            fh.write(noise)

    def lzma_read() -> int:
        with lzma.open(scratch / "noise.xz") as fh:
            return len(fh.read())

    def gzip_read() -> int:
        with gzip.open(scratch / "lines.txt.gz") as fh:
            return len(fh.read())

    def zip_members() -> int:
        with zipfile.ZipFile(scratch / "z.zip") as zf:
            return sum(len(zf.open(name).read()) for name in zf.namelist())

    def tar_members() -> int:
        with tarfile.open(scratch / "t.tar") as tar:
            return sum(len(tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile())

    return [
        Case(pq.ParquetFile.read, lambda: pq.ParquetFile(scratch / "f.parquet").read()),
        Case(pq.ParquetWriter.write_table, cleanup_after(lambda: parquet_writer(fresh("w.parquet")))),
        Case(ds.write_dataset, cleanup_after(lambda: ds.write_dataset(table, fresh("ds"), format="parquet"))),
        Case(ds.dataset, lambda: ds.dataset(scratch / "dataset", format="parquet").to_table()),
        Case(feather.write_feather, cleanup_after(lambda: feather.write_feather(frame, fresh("f.feather"),
                                                                                 compression="uncompressed"))),
        Case(feather.read_table, lambda: feather.read_table(scratch / "f.feather")),
        Case(fsspec.spec.AbstractFileSystem.cat_file, lambda: fs.cat_file(str(blob))),
        Case(fsspec.implementations.local.LocalFileSystem.cp_file,
             cleanup_after(lambda: fs.cp_file(str(blob), str(fresh("fs-copy"))))),
        Case(cloudpickle.dump, cleanup_after(lambda: pickle_to(fresh("f.cloudpickle")))),
        Case(_whoosh_add_document(), cleanup_after(lambda: whoosh_index(fresh("whoosh")))),
        Case(np.savetxt, cleanup_after(lambda: np.savetxt(fresh("grid.txt"), grid))),
        Case(np.loadtxt, lambda: np.loadtxt(_grid_file(scratch / "grid-in.txt", grid))),
        Case(csv.DictWriter.writerows, cleanup_after(lambda: csv_rows(fresh("rows.csv")))),
        Case(plistlib.dump, cleanup_after(lambda: plist(fresh("p.plist")))),
        Case(hashlib.file_digest, digest),
        Case(sqlite3.dump._iterdump, dump_sql),
        Case(bz2.BZ2File.write, cleanup_after(lambda: bz2_write(fresh("n.bz2")))),
        Case(lzma.LZMAFile.read, lzma_read),
        Case(gzip.GzipFile.read, gzip_read),
        Case(logging.handlers.RotatingFileHandler.emit, cleanup_after(lambda: _log_lines(
            logger, logging.handlers.RotatingFileHandler(fresh("rot.log"), maxBytes=200_000, backupCount=3), "event", "r"))),
        Case(zipfile.ZipExtFile.read, zip_members),
        Case(tarfile.TarFile.extractfile, tar_members),
    ]


def _grid_file(path: Path, grid) -> Path:
    if not path.exists():
        np.savetxt(path, grid)
    return path


def _whoosh_add_document():
    from whoosh.writing import SegmentWriter

    return SegmentWriter.add_document


def _copyfileobj(src: Path, dst: Path) -> None:
    with open(src, "rb") as a, open(dst, "wb") as b:
        shutil.copyfileobj(a, b)


def _tar_add(path: Path, tree: Path) -> None:
    with tarfile.open(path, "w") as tar:
        tar.add(tree, arcname="tree")


def _tar_extract(path: Path, dest: Path) -> None:
    with tarfile.open(path) as tar:
        tar.extractall(dest, filter="data")


def _zip_write(path: Path, tree: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for f in sorted(tree.iterdir()):
            zf.write(f, f.name)


def _zip_writestr(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for i in range(20):
            zf.writestr(f"m{i}", b"q" * 200_000)


def _json_dump(path: Path, payload) -> None:
    with open(path, "w") as fh:
        json.dump(payload, fh)


def _json_load(path: Path, payload):
    if not path.exists():
        path.write_text(json.dumps(payload))
    with open(path) as fh:
        return json.load(fh)


def _shelve(path: Path, records) -> None:
    with shelve.open(str(path)) as db:
        for i in range(0, len(records), 50):
            db[str(i)] = records[i:i + 50]


def _dbm(path: Path, records) -> None:
    db = dbm.dumb.open(str(path), "c")
    for i in range(0, 2000):
        db[str(i)] = b"v" * 2000
    db.close()


def _log_lines(logger, handler: logging.Handler, word: str = "line", fill: str = "x") -> None:
    """Write 5,000 records of about 70 bytes through ``handler``, then detach and close it."""
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    for i in range(5000):
        logger.info(f"{word} %d %s", i, fill * 60)
    logger.removeHandler(handler)
    handler.close()


def _mbox(path: Path) -> None:
    box = mailbox.mbox(str(path))
    for i in range(200):
        box.add(f"From: a@b\nSubject: {i}\n\n" + "body line\n" * 300)
    box.close()


def _wave(path: Path) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(b"\x01\x02" * 1_000_000)


def _gzip_write(path: Path) -> None:
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(os.urandom(2_000_000))


def _spooled() -> None:
    with tempfile.SpooledTemporaryFile(max_size=1000) as fh:
        for _ in range(40):
            fh.write(b"s" * 100_000)
        fh.seek(0)
        fh.read()


def _read_blocks(path: Path) -> int:
    buf = bytearray(1 << 20)
    total = 0
    with open(path, "rb") as fh:
        while n := fh.readinto(buf):
            total += n
    return total


def _read_tree(tree: Path) -> int:
    return sum(len(Path(root, f).read_bytes()) for root, _, files in os.walk(tree) for f in files)


def network_cases(ports: dict[str, int], scratch: Path) -> list[Case]:
    base = f"http://127.0.0.1:{ports['http']}"
    body = b"p" * 1_000_000

    def http_get(size: int) -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", ports["http"])
        conn.request("GET", f"/bytes/{size}")
        data = conn.getresponse().read()
        conn.close()
        return data

    def http_post() -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", ports["http"])
        conn.request("POST", "/sink", body=body, headers={"Content-Length": str(len(body))})
        data = conn.getresponse().read()
        conn.close()
        return data

    def readinto() -> int:
        conn = http.client.HTTPConnection("127.0.0.1", ports["http"])
        conn.request("GET", "/bytes/1000000")
        resp = conn.getresponse()
        buf = bytearray(65536)
        total = 0
        while n := resp.readinto(buf):
            total += n
        conn.close()
        return total

    def echo(size: int) -> int:
        with socket.create_connection(("127.0.0.1", ports["echo"])) as s:
            s.sendall(b"e" * size)
            s.shutdown(socket.SHUT_WR)
            with s.makefile("rb") as fh:
                return len(fh.read())

    async def stream_echo(size: int, how: str) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", ports["echo"])
        writer.write((b"a" * 999 + b"\n") * (size // 1000) if how in ("line", "until") else b"a" * size)
        await writer.drain()
        if how == "exactly":
            data = await reader.readexactly(size)
        elif how == "line":
            data = b""
            while len(data) < size:
                data += await reader.readline()
        elif how == "until":
            data = b""
            while len(data) < size:
                data += await reader.readuntil(b"\n")
        else:
            data = b""
            while len(data) < size:
                data += await reader.read(65536)
        writer.close()
        await writer.wait_closed()
        return len(data)

    async def sock_calls(size: int) -> int:
        loop = asyncio.get_running_loop()
        s = socket.create_connection(("127.0.0.1", ports["echo"]))
        s.setblocking(False)
        await loop.sock_sendall(s, b"s" * size)
        got = 0
        while got < size:
            got += len(await loop.sock_recv(s, 65536))
        s.close()
        return got

    def multiprocessing_link() -> int:
        listener = multiprocessing.connection.Listener(("127.0.0.1", 0))
        address = listener.address

        def serve():
            with listener.accept() as conn:
                for _ in range(4):
                    data = conn.recv_bytes()
                    time.sleep(len(data) / 25e6)
                    conn.send_bytes(data)

        t = threading.Thread(target=serve)
        t.start()
        with multiprocessing.connection.Client(address) as conn:
            for _ in range(4):
                conn.send_bytes(b"m" * 250_000)
                conn.recv_bytes()
        t.join()
        listener.close()
        return 0

    def smtp_send() -> None:
        with smtplib.SMTP("127.0.0.1", ports["smtp"]) as smtp:
            smtp.sendmail("a@b.c", ["d@e.f"], "Subject: x\r\n\r\n" + "line of mail\r\n" * 40000)

    def tornado_fetch() -> bytes:
        from tornado.httpclient import HTTPClient

        client = HTTPClient()
        try:
            return client.fetch(f"{base}/bytes/1000000").body
        finally:
            client.close()

    def http_send() -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", ports["http"])
        conn.putrequest("POST", "/sink")
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        conn.send(body)
        data = conn.getresponse().read()
        conn.close()
        return data

    def urllib_post() -> bytes:
        request = urllib.request.Request(f"{base}/sink", data=body, method="POST")
        return urllib.request.urlopen(request).read()

    def sendfile() -> int:
        path = Path(tempfile.gettempdir()) / "mantis-corpus-sendfile.bin"
        if not path.exists():
            path.write_bytes(b"f" * 800_000)
        with socket.create_connection(("127.0.0.1", ports["echo"])) as s, open(path, "rb") as fh:
            s.sendfile(fh)
            s.shutdown(socket.SHUT_WR)
            with s.makefile("rb") as rf:
                return len(rf.read())

    def makefile_write() -> int:
        with socket.create_connection(("127.0.0.1", ports["echo"])) as s:
            with s.makefile("wb") as wf:
                for _ in range(10):
                    wf.write(b"w" * 60_000)
            s.shutdown(socket.SHUT_WR)
            got = 0
            while data := s.recv(65536):
                got += len(data)
            return got

    def mp_client() -> None:
        listener = multiprocessing.connection.Listener(("127.0.0.1", 0), authkey=b"k")

        def serve():
            with listener.accept() as conn:
                data = conn.recv_bytes()
                time.sleep(len(data) / 25e6)
                conn.send_bytes(data)

        t = threading.Thread(target=serve)
        t.start()
        with multiprocessing.connection.Client(listener.address, authkey=b"k") as conn:
            conn.send_bytes(b"c" * 800_000)
            conn.recv_bytes()
        t.join()
        listener.close()

    def tornado_stream(size: int) -> int:
        from tornado.tcpclient import TCPClient

        async def go() -> int:
            stream = await TCPClient().connect("127.0.0.1", ports["echo"])
            await stream.write(b"t" * size)
            data = await stream.read_bytes(size)
            stream.close()
            return len(data)

        return asyncio.run(go())

    def smtp_message() -> None:
        from email.message import EmailMessage

        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "a@b.c", "d@e.f", "x"
        msg.set_content("a line of text\n" * 30000)
        with smtplib.SMTP("127.0.0.1", ports["smtp"]) as smtp:
            smtp.send_message(msg)

    rpc = xmlrpc.client.ServerProxy(f"http://127.0.0.1:{ports['xmlrpc']}", allow_none=True)
    big = ["v" * 50] * 8000
    return [
        Case(urllib.request.urlopen, lambda: urllib.request.urlopen(f"{base}/bytes/1000000").read()),
        Case(urllib.request.urlretrieve, lambda: _urlretrieve(f"{base}/bytes/1000000")),
        Case(urllib.request.OpenerDirector.open, lambda: urllib.request.build_opener().open(f"{base}/bytes/500000").read()),
        Case(http.client.HTTPResponse.read, lambda: http_get(1_500_000)),
        Case(http.client.HTTPConnection.request, http_post),
        Case(http.client.HTTPResponse.readinto, readinto),
        Case(xmlrpc.client.ServerProxy.__getattr__, lambda: rpc.echo(big)),
        Case(xmlrpc.client.Transport.request, lambda: rpc.echo(big[:4000])),
        Case(socket.create_connection, lambda: echo(600_000)),
        Case(socket.SocketIO.readinto, lambda: echo(1_000_000)),
        Case(asyncio.open_connection, lambda: asyncio.run(stream_echo(500_000, "read"))),
        Case(asyncio.StreamReader.readexactly, lambda: asyncio.run(stream_echo(700_000, "exactly"))),
        Case(asyncio.StreamWriter.drain, lambda: asyncio.run(stream_echo(900_000, "read"))),
        Case(asyncio.selector_events.BaseSelectorEventLoop.sock_sendall, lambda: asyncio.run(sock_calls(600_000))),
        Case(asyncio.selector_events.BaseSelectorEventLoop.sock_recv, lambda: asyncio.run(sock_calls(900_000))),
        Case(multiprocessing.connection.Connection.recv_bytes, multiprocessing_link),
        Case(smtplib.SMTP.sendmail, smtp_send),
        Case(smtplib.SMTP.data, smtp_send),
        Case(_tornado_fetch_target(), tornado_fetch),
        Case(http.client.HTTPConnection.getresponse, lambda: http_get(800_000)),
        Case(http.client.HTTPConnection.send, http_send),
        Case(http.client.HTTPConnection.endheaders, http_send),
        Case(urllib.request.AbstractHTTPHandler.do_open, urllib_post),
        Case(socket.socket.sendfile, sendfile),
        Case(socket.SocketIO.write, makefile_write),
        Case(asyncio.StreamReader.read, lambda: asyncio.run(stream_echo(800_000, "read"))),
        Case(asyncio.StreamReader.readline, lambda: asyncio.run(stream_echo(300_000, "line"))),
        Case(asyncio.StreamReader.readuntil, lambda: asyncio.run(stream_echo(400_000, "until"))),
        Case(multiprocessing.connection.Client, mp_client),
        Case(multiprocessing.connection._ConnectionBase.send_bytes, mp_client),
        Case(_tornado_attr("tcpclient", "TCPClient", "connect"), lambda: tornado_stream(600_000)),
        Case(_tornado_attr("iostream", "BaseIOStream", "read_bytes"), lambda: tornado_stream(900_000)),
        Case(_tornado_attr("iostream", "BaseIOStream", "write"), lambda: tornado_stream(700_000)),
        Case(smtplib.SMTP.send_message, smtp_message),
        Case(xmlrpc.client.Transport.single_request, lambda: rpc.echo(big[:6000])),
        *_network_cases_more(ports, scratch, rpc, big),
    ]


RATE = 25e6  # the pace of corpus_servers.py's links, for the servers a driver starts itself


def _network_cases_more(ports: dict[str, int], scratch: Path, rpc, big) -> list[Case]:
    """More of asyncio, http.server, socketserver, multiprocessing, urllib, tornado and xmlrpc over the loopback."""
    base = f"http://127.0.0.1:{ports['http']}"
    served = scratch / "served"
    served.mkdir()
    (served / "page.bin").write_bytes(b"h" * 1_000_000)

    def http_server_get() -> int:
        handler = functools.partial(_QuietFiles, directory=str(served))
        with http.server.HTTPServer(("127.0.0.1", 0), handler) as server:
            t = threading.Thread(target=server.handle_request)
            t.start()
            conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1])
            conn.request("GET", "/page.bin")
            got = _paced_read(conn.getresponse())
            conn.close()
            t.join()
        return got

    def socketserver_request() -> int:
        with socketserver.TCPServer(("127.0.0.1", 0), _PacedEcho) as server:
            t = threading.Thread(target=server.handle_request)
            t.start()
            got = _echo_roundtrip(server.server_address, b"q" * 600_000)
            t.join()
        return got

    async def asyncio_server(size: int) -> int:
        async def handle(reader, writer):
            while data := await reader.read(65536):
                await asyncio.sleep(len(data) / RATE)
                writer.write(data)
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"z" * size)
        writer.write_eof()
        got = len(await reader.read())
        writer.close()
        server.close()
        await server.wait_closed()
        return got

    async def protocol_echo(size: int) -> int:
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        class Counter(asyncio.Protocol):
            got = 0

            def data_received(self, data: bytes) -> None:
                self.got += len(data)
                if self.got >= size and not done.done():
                    done.set_result(self.got)

        transport, _ = await loop.create_connection(Counter, "127.0.0.1", ports["echo"])
        transport.write(b"c" * size)
        got = await done
        transport.close()
        return got

    async def recv_into(size: int) -> int:
        loop = asyncio.get_running_loop()
        s = socket.create_connection(("127.0.0.1", ports["echo"]))
        s.setblocking(False)
        await loop.sock_sendall(s, b"r" * size)
        buf = bytearray(65536)
        got = 0
        while got < size:
            got += await loop.sock_recv_into(s, buf)
        s.close()
        return got

    async def sock_sendfile() -> int:
        loop = asyncio.get_running_loop()
        s = socket.create_connection(("127.0.0.1", ports["echo"]))
        s.setblocking(False)
        with open(served / "page.bin", "rb") as fh:
            await loop.sock_sendfile(s, fh)
        s.shutdown(socket.SHUT_WR)
        got = 0
        while data := await loop.sock_recv(s, 65536):
            got += len(data)
        s.close()
        return got

    def mp_objects() -> None:
        listener = multiprocessing.connection.Listener(("127.0.0.1", 0))

        def serve():
            with listener.accept() as conn:
                rows = conn.recv()
                time.sleep(len(rows) * 60 / RATE)
                conn.send(rows)

        t = threading.Thread(target=serve)
        t.start()
        with multiprocessing.connection.Client(listener.address) as conn:
            conn.send([("row", i, "x" * 40) for i in range(15_000)])
            conn.recv()
        t.join()
        listener.close()

    def tornado_async_fetch() -> int:
        from tornado.httpclient import AsyncHTTPClient

        async def go() -> int:
            return len((await AsyncHTTPClient().fetch(f"{base}/bytes/900000")).body)

        return asyncio.run(go())

    def tornado_read_until(lines: int) -> int:
        from tornado.tcpclient import TCPClient

        async def go() -> int:
            stream = await TCPClient().connect("127.0.0.1", ports["echo"])
            await stream.write((b"u" * 999 + b"\n") * lines)
            got = 0
            for _ in range(lines):
                got += len(await stream.read_until(b"\n"))
            stream.close()
            return got

        return asyncio.run(go())

    def http_open() -> bytes:
        opener = urllib.request.build_opener(urllib.request.HTTPHandler())
        return opener.open(f"{base}/bytes/700000").read()

    def read1() -> int:
        conn = http.client.HTTPConnection("127.0.0.1", ports["http"])
        conn.request("GET", "/bytes/1200000")
        resp = conn.getresponse()
        got = 0
        while data := resp.read1(65536):
            got += len(data)
        conn.close()
        return got

    def makefile_rw() -> int:
        with socket.create_connection(("127.0.0.1", ports["echo"])) as s:
            fh = s.makefile("rwb")
            fh.write(b"k" * 700_000)
            fh.flush()
            s.shutdown(socket.SHUT_WR)
            got = len(fh.read())
            fh.close()
            return got

    return [
        Case(http.server.SimpleHTTPRequestHandler.do_GET, http_server_get),
        Case(http.server.SimpleHTTPRequestHandler.copyfile, http_server_get),
        Case(socketserver.BaseServer.handle_request, socketserver_request),
        Case(asyncio.start_server, lambda: asyncio.run(asyncio_server(600_000))),
        Case(asyncio.StreamWriter.write, lambda: asyncio.run(asyncio_server(900_000))),
        Case(asyncio.base_events.BaseEventLoop.create_connection, lambda: asyncio.run(protocol_echo(700_000))),
        Case(asyncio.selector_events.BaseSelectorEventLoop.sock_recv_into, lambda: asyncio.run(recv_into(800_000))),
        Case(asyncio.base_events.BaseEventLoop.sock_sendfile, lambda: asyncio.run(sock_sendfile())),
        Case(multiprocessing.connection._ConnectionBase.send, mp_objects),
        Case(multiprocessing.connection._ConnectionBase.recv, mp_objects),
        Case(multiprocessing.connection.Listener.accept, mp_objects),
        Case(_tornado_attr("httpclient", "AsyncHTTPClient", "fetch"), tornado_async_fetch),
        Case(_tornado_attr("iostream", "BaseIOStream", "read_until"), lambda: tornado_read_until(600)),
        Case(urllib.request.HTTPHandler.http_open, http_open),
        Case(http.client.HTTPResponse.read1, read1),
        Case(socket.socket.makefile, makefile_rw),
        Case(xmlrpc.client.Transport.parse_response, lambda: rpc.echo(big[:7000])),
    ]


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass


class _PacedEcho(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            time.sleep(len(data) / RATE)
            self.request.sendall(data)


def _paced_read(resp) -> int:
    """Read a response as a 25 MB/s link would deliver it."""
    got = 0
    start = time.perf_counter()
    while data := resp.read(65536):
        got += len(data)
        ahead = got / RATE - (time.perf_counter() - start)
        if ahead > 0:
            time.sleep(ahead)
    return got


def _echo_roundtrip(address, payload: bytes) -> int:
    with socket.create_connection(address) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        with s.makefile("rb") as fh:
            return len(fh.read())


def _tornado_attr(module: str, cls: str, name: str):
    import importlib

    return getattr(getattr(importlib.import_module(f"tornado.{module}"), cls), name)


def _tornado_fetch_target():
    from tornado.httpclient import HTTPClient

    return HTTPClient.fetch


def _urlretrieve(url: str) -> None:
    path, _ = urllib.request.urlretrieve(url)
    os.unlink(path)


def main() -> None:
    """Measure every case and write the corpus."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "mantispy" / "dataflow" / "corpus.json")
    parser.add_argument("--new-only", type=Path, metavar="CORPUS",
                        help="measure only the functions not already in this corpus file, and write just those")
    args = parser.parse_args()
    known = set()
    if args.new_only is not None:
        known = {e["function"] for e in json.loads(args.new_only.read_text())["functions"]}
    scratch = Path(tempfile.mkdtemp(prefix="mantis-corpus-"))
    ports_file = scratch / "ports.json"
    server = subprocess.Popen([sys.executable, str(HERE / "corpus_servers.py"), str(ports_file)])
    try:
        deadline = time.time() + 30
        while not ports_file.exists() and time.time() < deadline:
            time.sleep(0.1)
        ports = json.loads(ports_file.read_text())
        families = [("cpu", cpu_cases(scratch)), ("memory", memory_cases(scratch)), ("disk", disk_cases(scratch)),
                    ("network", network_cases(ports, scratch))]
        entries = []
        seen = set()
        for family, cases in families:
            for case in cases:
                try:
                    module, qualname, path, line = _located(case.target)
                except (AttributeError, TypeError) as exc:
                    print(f"skipped  {case.target!r}: no Python source ({exc})", flush=True)
                    continue
                name = f"{module}.{qualname}"
                if name in seen or name in known:
                    continue
                seen.add(name)
                try:
                    measured = measure(case.driver)
                except Exception as exc:  # noqa: BLE001 - a case that cannot run is reported, not labelled
                    print(f"skipped  {name}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                features = features_at(path, line)
                if not features:
                    print(f"skipped  {name}: its source could not be read at {path}:{line}", flush=True)
                    continue
                entries.append({"function": name, "family": family, "label": label(measured),
                                "file": _short(path), "line": line, "measured": measured, "features": features})
                print(f"{entries[-1]['label']:8} (driver {family:7}) {name}  cpu/wall "
                      f"{measured['cpu_s'] / max(measured['wall_s'], 1e-9):.2f}  files "
                      f"{max(0, measured['io_bytes'] - 2 * measured['net_bytes']) / 1e6:.2f} MB  net "
                      f"{measured['net_bytes'] / 1e6:.2f} MB  alloc {measured['alloc_peak_bytes'] / 1e6:.1f} MB", flush=True)
    finally:
        server.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    document = {"format": "mantispy-resource-corpus", "version": 1,
                "machine": f"{os.cpu_count()} cores; Python {sys.version.split()[0]}",
                "rules": "network: >= 64 KiB over the loopback per call and at least as many as through files; "
                         "disk: >= 256 KiB per call through files; memory: >= 16 MB allocated at peak per call and >= 1 GB "
                         "per CPU second; "
                         "cpu: the rest", "functions": entries}
    args.out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    counts = collections.Counter(e["label"] for e in entries)
    print(f"{len(entries)} functions: {dict(counts)} -> {args.out}")


def _short(path: str) -> str:
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            return path.split(marker, 1)[1] if marker == "site-packages/" else "stdlib/" + path.split(marker, 1)[1].split("/", 1)[1]
    return path


if __name__ == "__main__":
    main()
