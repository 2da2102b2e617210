"""The run store: an embedded SQLite database (``mantis.db``) of profiling campaigns and their runs.

One row per finished run, written in one transaction, so a campaign killed at any moment (SIGKILL
included) loses only the runs that were still running. WAL mode lets readers (``mantispy runs``, a
notebook) look while a campaign writes.

Tables (schema version :data:`SCHEMA_VERSION`; a store written by a newer mantispy is refused):

``campaigns``      name, spec (JSON) and its hash, source hash, the instrumented build's manifest,
                   environment fingerprint, instrumentation-overhead calibration, input coverage
``inputs``         each input's id and descriptor (argv / kwargs, sizes of named input files)
``runs``           campaign, input, repeat, variant (``instrumented`` or ``original``), status
                   (``ok``, ``failed``, ``timeout``, ``error``), exit code, stderr tail, host, times
``metrics``        open set of named metrics per run (``wall_s``, ``cpu_s``, ``max_rss_kb``, ...)
``feature_names``  feature id strings, interned
``run_features``   per run, its non-zero features packed as two arrays: interned feature ids
                   (little-endian uint32) and values (little-endian float64); a zero costs nothing,
                   and loading thousands of runs x thousands of features is a few numpy scatters

:meth:`RunStore.dataframe` returns one row per run with metric and feature columns, what the model
generator reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mantispy.runtime.descriptors import input_numbers

SCHEMA_VERSION = 1
DEFAULT_STORE = "mantis.db"
STATUSES = ("ok", "failed", "timeout", "error")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    spec_json TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    manifest_json TEXT,
    environment_json TEXT NOT NULL,
    calibration_json TEXT,
    coverage_json TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS inputs (
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    input_id TEXT NOT NULL,
    descriptor_json TEXT NOT NULL,
    PRIMARY KEY (campaign_id, input_id)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    input_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    variant TEXT NOT NULL,
    status TEXT NOT NULL,
    returncode INTEGER,
    stderr_tail TEXT,
    host TEXT,
    started REAL,
    finished REAL,
    UNIQUE (campaign_id, input_id, repeat, variant)
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS feature_names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS run_features (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id),
    ids BLOB NOT NULL,
    vals BLOB NOT NULL
);
"""


class StoreError(Exception):
    """The store cannot be used (corrupt, locked, from a newer mantispy, wrong campaign)."""


@dataclass
class RunRecord:
    """One finished run, as the profiler hands it to the store."""

    input_id: str
    repeat: int
    variant: str  # "instrumented" or "original"
    status: str  # one of STATUSES
    returncode: int | None
    metrics: dict[str, float]
    features: dict[str, float] = field(default_factory=dict)
    stderr_tail: str = ""
    host: str = ""
    started: float = 0.0
    finished: float = 0.0
    sampled: dict[str, Any] | None = None  # profile --sample: stacks, samples and resource points of the run


@dataclass
class Campaign:
    """A campaign row."""

    id: int
    name: str
    spec: dict[str, Any]
    spec_hash: str
    source_hash: str
    manifest: dict[str, Any] | None
    environment: dict[str, Any]
    calibration: dict[str, Any] | None
    coverage: dict[str, Any] | None
    created: float


def spec_digest(spec: dict[str, Any]) -> str:
    """Stable hash of a spec (what a campaign's identity is made of)."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


_UNREADABLE = (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError)


def _reading(method):
    """A read of stored rows: a row SQLite accepted but mantispy cannot read is a StoreError (one line)."""

    @functools.wraps(method)
    def read(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StoreError:
            raise
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc)) from None
        except _UNREADABLE as exc:
            said = " ".join(str(exc).split())[:160]
            raise StoreError(f"{self.path}: a stored row cannot be read ({type(exc).__name__}: {said}); the store is "
                             "damaged: profile into a new --store, or again with --replace") from None

    return read


def explain_sqlite(path: Path, exc: Exception) -> str:
    """One line for a SQLite failure on a store file, naming the fix (the run store's and the recordings')."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{path}: the store is locked by another process; wait for it or use another --store"
    if "database or disk is full" in text or "disk I/O" in text:
        return f"{path}: the disk is full or failing ({text}); free space, or pass --store on another disk"
    if "not a database" in text or "malformed" in text or "encrypted" in text:
        return f"{path}: not a mantispy store or corrupt ({text}); move it away or pass another --store"
    return f"{path}: {text}"


def not_a_database(path: Path) -> bool:
    """Whether an existing file is empty, which SQLite would make a database of where a reader must refuse
    it (any other file that is no database SQLite refuses itself). Only its size is looked at: opening and
    closing the file here would drop the POSIX locks of this process's SQLite connections to it."""
    try:
        return Path(path).stat().st_size == 0
    except OSError:
        return False  # unreadable: SQLite's own error says why


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the database holds a table of that name."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


class RunStore:
    """Read/write access to one store file. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path | str, create: bool = True, timeout: float = 10.0) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no such store; run mantispy profile first or pass --store")
        if not create and self.path.is_file() and not_a_database(self.path):
            raise StoreError(f"{self.path}: not a mantispy store or corrupt (an empty file); give the run store's path with --store")
        try:
            self.db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            if not create and not has_table(self.db, "meta"):
                self.db.close()
                raise StoreError(f"{self.path}: a database, but not a mantispy run store; give the run store's path "
                                 "with --store")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            raise StoreError(self._explain(exc)) from None

    def _explain(self, exc: sqlite3.Error) -> str:
        return explain_sqlite(self.path, exc)

    def _check_schema(self) -> None:
        row = None
        has_meta = self.db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if has_meta:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and int(row[0]) > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema {row[0]} was written by a newer mantispy (this one reads "
                f"{SCHEMA_VERSION}); upgrade mantispy or use another --store"
            )
        self.db.executescript(_SCHEMA)  # idempotent: CREATE ... IF NOT EXISTS
        if row is None:
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    # ------------------------------------------------------------------ plumbing
    class _Tx:
        def __init__(self, store: RunStore) -> None:
            self.store = store

        def __enter__(self) -> sqlite3.Connection:
            try:
                self.store.db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(self.store._explain(exc)) from None
            return self.store.db

        def __exit__(self, kind, value, tb) -> None:
            if kind is not None:
                self.store.__dict__.pop("_name_ids", None)  # names interned in this transaction are gone
            try:
                self.store.db.execute("ROLLBACK" if kind else "COMMIT")
            except sqlite3.Error as exc:
                if kind is None:
                    raise StoreError(self.store._explain(exc)) from None
            if isinstance(value, sqlite3.Error):
                raise StoreError(self.store._explain(value)) from None

    def _transaction(self) -> RunStore._Tx:
        return RunStore._Tx(self)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ campaigns and inputs
    @_reading
    def campaign(self, name: str) -> Campaign | None:
        """The campaign called ``name``, or None."""
        row = self.db.execute(
            "SELECT id, name, spec_json, spec_hash, source_hash, manifest_json, environment_json, "
            "calibration_json, coverage_json, created FROM campaigns WHERE name = ?",
            (name,),
        ).fetchone()
        if row is None:
            return None
        loads = lambda text: None if text is None else json.loads(text)  # noqa: E731
        return Campaign(row[0], row[1], json.loads(row[2]), row[3], row[4], loads(row[5]), json.loads(row[6]),
                        loads(row[7]), loads(row[8]), row[9])

    @_reading
    def campaigns(self) -> list[Campaign]:
        """All campaigns, oldest first."""
        names = [r[0] for r in self.db.execute("SELECT name FROM campaigns ORDER BY id")]
        return [c for c in (self.campaign(n) for n in names) if c is not None]

    def open_campaign(self, name: str, spec: dict[str, Any], source_hash: str, manifest: dict[str, Any] | None,
                      environment: dict[str, Any], replace: bool = False) -> Campaign:
        """Create the campaign, or return it if it exists with the same spec and source.

        A campaign of the same name made from another spec or source is refused (its runs would not
        be comparable), unless ``replace`` deletes it first.
        """
        digest = spec_digest(spec)
        existing = self.campaign(name)
        if existing is not None and (existing.spec_hash != digest or existing.source_hash != source_hash):
            if not replace:
                what = "spec" if existing.spec_hash != digest else "program source"
                raise StoreError(
                    f"{self.path}: campaign {name!r} was profiled with a different {what}; "
                    "give it another name or pass --replace to discard its runs"
                )
            self.delete_campaign(name)
            existing = None
        if existing is not None:
            return existing
        with self._transaction() as db:
            db.execute(
                "INSERT INTO campaigns (name, spec_json, spec_hash, source_hash, manifest_json, environment_json, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, json.dumps(spec, default=str), digest, source_hash,
                 None if manifest is None else json.dumps(manifest), json.dumps(environment), time.time()),
            )
        campaign = self.campaign(name)
        assert campaign is not None
        return campaign

    def delete_campaign(self, name: str) -> None:
        """Remove a campaign and everything it owns."""
        with self._transaction() as db:
            row = db.execute("SELECT id FROM campaigns WHERE name = ?", (name,)).fetchone()
            if row is None:
                return
            cid = row[0]
            run_ids = "SELECT id FROM runs WHERE campaign_id = ?"
            db.execute(f"DELETE FROM run_features WHERE run_id IN ({run_ids})", (cid,))
            db.execute(f"DELETE FROM metrics WHERE run_id IN ({run_ids})", (cid,))
            db.execute("DELETE FROM runs WHERE campaign_id = ?", (cid,))
            db.execute("DELETE FROM inputs WHERE campaign_id = ?", (cid,))
            db.execute("DELETE FROM campaigns WHERE id = ?", (cid,))

    def set_campaign_json(self, campaign: Campaign, column: str, value: dict[str, Any]) -> None:
        """Store the calibration or coverage summary of a campaign."""
        if column not in ("calibration_json", "coverage_json"):
            raise ValueError(column)
        with self._transaction() as db:
            db.execute(f"UPDATE campaigns SET {column} = ? WHERE id = ?", (json.dumps(value), campaign.id))

    def add_inputs(self, campaign: Campaign, descriptors: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Record input descriptors (id, descriptor); an input already recorded keeps its first one."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO inputs VALUES (?, ?, ?)",
                [(campaign.id, iid, json.dumps(d, default=str)) for iid, d in descriptors],
            )

    @_reading
    def inputs(self, campaign: Campaign) -> dict[str, dict[str, Any]]:
        """Input id -> descriptor."""
        rows = self.db.execute("SELECT input_id, descriptor_json FROM inputs WHERE campaign_id = ?", (campaign.id,))
        return {iid: json.loads(d) for iid, d in rows}

    # ------------------------------------------------------------------ runs
    @_reading
    def done(self, campaign: Campaign) -> set[tuple[str, int, str]]:
        """(input, repeat, variant) of every stored run: what a resumed campaign skips."""
        rows = self.db.execute("SELECT input_id, repeat, variant FROM runs WHERE campaign_id = ?", (campaign.id,))
        return {(i, r, v) for i, r, v in rows}

    def add_run(self, campaign: Campaign, run: RunRecord) -> int:
        """Store one finished run with its metrics and features, atomically."""
        if run.status not in STATUSES:
            raise ValueError(f"unknown status {run.status}")
        with self._transaction() as db:
            cur = db.execute(
                "INSERT OR REPLACE INTO runs (campaign_id, input_id, repeat, variant, status, returncode, stderr_tail, "
                "host, started, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (campaign.id, run.input_id, run.repeat, run.variant, run.status, run.returncode, run.stderr_tail,
                 run.host, run.started, run.finished),
            )
            run_id = int(cur.lastrowid)
            db.executemany("INSERT INTO metrics VALUES (?, ?, ?)", [(run_id, k, float(v)) for k, v in run.metrics.items()])
            nonzero = {k: v for k, v in run.features.items() if v}
            if nonzero:
                ids = self._intern(db, nonzero)
                packed_ids = np.array([ids[k] for k in nonzero], dtype="<u4")
                packed_vals = np.array([float(v) for v in nonzero.values()], dtype="<f8")
                db.execute("INSERT OR REPLACE INTO run_features VALUES (?, ?, ?)",
                           (run_id, packed_ids.tobytes(), packed_vals.tobytes()))
        return run_id

    def _intern(self, db: sqlite3.Connection, names: Iterable[str]) -> dict[str, int]:
        """Ids of feature names, adding the new ones (cached: a campaign repeats the same names)."""
        cache = self.__dict__.setdefault("_name_ids", {})
        missing = [n for n in names if n not in cache]
        if missing:
            db.executemany("INSERT OR IGNORE INTO feature_names (name) VALUES (?)", [(k,) for k in missing])
            cache.update(self._feature_ids(db, missing))
        return cache

    @staticmethod
    def _feature_ids(db: sqlite3.Connection, names: Iterable[str]) -> dict[str, int]:
        names = list(names)
        ids: dict[str, int] = {}
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            marks = ",".join("?" * len(chunk))
            ids.update({n: i for i, n in db.execute(f"SELECT id, name FROM feature_names WHERE name IN ({marks})", chunk)})
        return ids

    @_reading
    def runs(self, campaign: Campaign, variant: str | None = None) -> list[dict[str, Any]]:
        """Run rows (dicts) with their metrics, in storage order."""
        query = "SELECT id, input_id, repeat, variant, status, returncode, stderr_tail, host, started, finished FROM runs WHERE campaign_id = ?"
        args: list[Any] = [campaign.id]
        if variant:
            query += " AND variant = ?"
            args.append(variant)
        cols = ("run_id", "input_id", "repeat", "variant", "status", "returncode", "stderr_tail", "host", "started", "finished")
        rows = [dict(zip(cols, r)) for r in self.db.execute(query + " ORDER BY id", args)]
        metrics: dict[int, dict[str, float]] = {}
        for run_id, name, value in self.db.execute(
            "SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.campaign_id = ?",
            (campaign.id,),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"metric {name!r} of run {run_id} is {value!r}, not a number")
            metrics.setdefault(run_id, {})[name] = value
        for row in rows:
            if not isinstance(row["input_id"], str) or not isinstance(row["status"], str) or not isinstance(row["repeat"], int):
                raise ValueError(f"run {row['run_id']} has an input id, status or repeat of the wrong type")
            row["metrics"] = metrics.get(row["run_id"], {})
        return rows

    def features_of(self, campaign: Campaign) -> Iterator[tuple[int, str, float]]:
        """(run id, feature id, value) of every non-zero feature of the campaign's runs."""
        names = dict(self.db.execute("SELECT id, name FROM feature_names"))
        for run_id, ids, vals in self._packed(campaign):
            for i, v in zip(ids.tolist(), vals.tolist()):
                yield run_id, names[i], v

    def _packed(self, campaign: Campaign) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        rows = self.db.execute(
            "SELECT f.run_id, f.ids, f.vals FROM run_features f JOIN runs r ON r.id = f.run_id WHERE r.campaign_id = ?",
            (campaign.id,),
        )
        for run_id, ids, vals in rows:
            yield run_id, np.frombuffer(ids, dtype="<u4"), np.frombuffer(vals, dtype="<f8")

    @_reading
    def dataframe(self, campaign: Campaign | str, variant: str = "instrumented", status: str | None = "ok",
                  features: bool = True, metrics_from: str | None = None):
        """One row per run: ``input_id``, ``repeat``, ``status``, metric columns, then feature columns.

        Feature columns are named by feature id and hold 0 where a run did not record the feature.
        Metric columns are prefixed ``metric:``; input descriptor numbers are ``input:`` columns (the
        black-box baseline's view; 0 where an input does not give that number, e.g. a flag it lacks). ``metrics_from="original"`` takes the metrics of each run from the
        uninstrumented runs of the same input (``calibration_runs = "all"``): per metric, the median
        over its successful repeats; runs whose input has none are dropped. Features from the
        instrumented program, costs of the original one.
        """
        import pandas as pd

        if isinstance(campaign, str):
            found = self.campaign(campaign)
            if found is None:
                raise StoreError(f"{self.path}: no campaign named {campaign!r}")
            campaign = found
        rows = [r for r in self.runs(campaign, variant) if status is None or r["status"] == status]
        if metrics_from is not None and metrics_from != variant:
            source = median_metrics(r for r in self.runs(campaign, metrics_from) if r["status"] == "ok")
            rows = [dict(r, metrics=source[r["input_id"]]) for r in rows if r["input_id"] in source]
        descriptors = self.inputs(campaign)
        base = pd.DataFrame(
            [
                {
                    "run_id": r["run_id"],
                    "input_id": r["input_id"],
                    "repeat": r["repeat"],
                    "status": r["status"],
                    **{f"metric:{k}": v for k, v in r["metrics"].items()},
                    **{f"input:{k}": v for k, v in input_numbers(descriptors.get(r["input_id"], {})).items()},
                }
                for r in rows
            ]
        )
        if base.empty:
            return base
        inputs = [c for c in base.columns if c.startswith("input:")]
        base[inputs] = base[inputs].fillna(0.0)  # an option an input does not give is 0, as a predictor reads it
        base = base.set_index("run_id")
        if not features:
            return base
        position = {run_id: n for n, run_id in enumerate(base.index)}
        packed = [(position[r], ids, vals) for r, ids, vals in self._packed(campaign) if r in position]
        used = np.unique(np.concatenate([ids for _, ids, _ in packed])) if packed else np.zeros(0, dtype="<u4")
        names = dict(self.db.execute("SELECT id, name FROM feature_names"))
        order = sorted(range(len(used)), key=lambda n: names[int(used[n])])  # columns by feature id
        column_of = np.empty(len(used), dtype=np.int64)
        column_of[order] = np.arange(len(used))
        matrix = np.zeros((len(base), len(used)))
        for row, ids, vals in packed:
            matrix[row, column_of[np.searchsorted(used, ids)]] = vals
        feats = pd.DataFrame(matrix, index=base.index, columns=[names[int(used[n])] for n in order])
        return pd.concat([base, feats], axis=1)


def median_metrics(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """{input id: {metric: median over the rows of that input}} from run rows."""
    import statistics

    values: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        for name, value in row["metrics"].items():
            values.setdefault(row["input_id"], {}).setdefault(name, []).append(value)
    return {iid: {name: statistics.median(v) for name, v in metrics.items()} for iid, metrics in values.items()}
