"""Recordings in a SQLite store: metadata, interned stacks, samples and time series points.

The tables live beside a campaign's run tables (``mantispy profile --sample`` writes into the campaign's
store) or in a file of their own (``mantispy record``'s default ``.mantis/record.db``). Every batch is
one transaction, so a recording killed at any moment keeps every batch written before; a recording
whose recorder died stays ``recording`` in the table and is shown as ``incomplete``.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from mantispy.store import explain_sqlite, has_table, not_a_database

from .types import WHOLE, Frame, Point, Recording, Sample, Window

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS rec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS recordings (
    id INTEGER PRIMARY KEY,
    command_json TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    status TEXT NOT NULL,
    returncode INTEGER,
    host TEXT NOT NULL,
    rate REAL NOT NULL,
    interval REAL NOT NULL,
    mode TEXT NOT NULL,
    sampler TEXT NOT NULL,
    run_id INTEGER,
    recorder_pid INTEGER,
    notes_json TEXT NOT NULL DEFAULT '[]',
    cwd TEXT,
    library_json TEXT
);
CREATE TABLE IF NOT EXISTS rec_stacks (
    recording_id INTEGER NOT NULL REFERENCES recordings(id),
    id INTEGER NOT NULL,
    frames_json TEXT NOT NULL,
    PRIMARY KEY (recording_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rec_samples (
    recording_id INTEGER NOT NULL REFERENCES recordings(id),
    t REAL NOT NULL,
    pid INTEGER NOT NULL,
    tid INTEGER NOT NULL,
    stack_id INTEGER NOT NULL,
    weight REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rec_samples_time ON rec_samples (recording_id, t);
CREATE TABLE IF NOT EXISTS rec_points (
    recording_id INTEGER NOT NULL REFERENCES recordings(id),
    metric TEXT NOT NULL,
    t REAL NOT NULL,
    value REAL NOT NULL,
    pid INTEGER NOT NULL,
    tags_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rec_points_time ON rec_points (recording_id, metric, t);
CREATE TABLE IF NOT EXISTS rec_phases (
    recording_id INTEGER PRIMARY KEY REFERENCES recordings(id),
    options_json TEXT NOT NULL,
    phases_json TEXT NOT NULL
);
"""


class RecordingError(Exception):
    """A store or recording that cannot be used; the message is one line naming the file and the fix."""


class RecordingStore:
    """Read/write access to the recordings of one store file. Use as a context manager."""

    def __init__(self, path: Path | str, create: bool = True, timeout: float = 10.0) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise RecordingError(f"{self.path}: no such store; run mantispy record first or pass --store")
        if not create and self.path.is_file() and not_a_database(self.path):
            raise RecordingError(f"{self.path}: not a mantispy store or corrupt (an empty file); give the recordings' store with "
                                 "--store")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            if not create and not has_table(self.db, "rec_meta"):
                self.db.close()
                raise RecordingError(f"{self.path}: holds no recordings; run mantispy record --store {self.path} first")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            row = None
            if self.db.execute("SELECT name FROM sqlite_master WHERE name='rec_meta'").fetchone():
                row = self.db.execute("SELECT value FROM rec_meta WHERE key='schema_version'").fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise RecordingError(f"{self.path}: recordings written by a newer mantispy (schema {row[0]}, this one "
                                     f"reads {SCHEMA_VERSION}); upgrade mantispy or pass another --store")
            if create or row is not None:
                self.db.executescript(_SCHEMA)
                columns = {row[1] for row in self.db.execute("PRAGMA table_info(recordings)")}
                if "cwd" not in columns:  # stores written before recordings kept their folder
                    self.db.execute("ALTER TABLE recordings ADD COLUMN cwd TEXT")
                if "library_json" not in columns:  # stores written before recordings kept their library paths
                    self.db.execute("ALTER TABLE recordings ADD COLUMN library_json TEXT")
                self.db.execute("INSERT OR IGNORE INTO rec_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif row is None:
                raise RecordingError(f"{self.path}: holds no recordings; run mantispy record --store {self.path} first")
        except (sqlite3.Error, ValueError) as exc:
            raise RecordingError(self.explain(exc)) from None

    def explain(self, exc: Exception) -> str:
        """One line for a SQLite failure on this file (the run store's wording)."""
        return explain_sqlite(self.path, exc)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> RecordingStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, sql: str, rows: Iterable[tuple] | tuple = ()) -> sqlite3.Cursor:
        try:
            if isinstance(rows, tuple):
                return self.db.execute(sql, rows)
            return self.db.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise RecordingError(self.explain(exc)) from None

    # ------------------------------------------------------------------ writing
    def begin(self, recording: Recording, recorder_pid: int) -> int:
        """Store a new recording (status ``recording``); returns its id."""
        cursor = self._write(
            "INSERT INTO recordings (command_json, started, status, host, rate, interval, mode, sampler, run_id, "
            "recorder_pid, notes_json, cwd, library_json) VALUES (?, ?, 'recording', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (json.dumps(recording.command), recording.started, recording.host, recording.rate, recording.interval,
             recording.mode, recording.sampler, recording.run_id, recorder_pid, json.dumps(recording.notes),
             recording.cwd or None, json.dumps(list(recording.library)) if recording.library else None))
        return int(cursor.lastrowid or 0)

    def add_batch(self, recording_id: int, stacks: dict[int, list[str]], samples: list[tuple[float, int, int, int, float]],
                  points: list[Point]) -> None:
        """One transaction: new stacks (recording-wide ids), samples and points."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            if stacks:
                self.db.executemany("INSERT OR IGNORE INTO rec_stacks VALUES (?, ?, ?)",
                                    [(recording_id, sid, json.dumps(frames)) for sid, frames in stacks.items()])
            if samples:
                self.db.executemany("INSERT INTO rec_samples VALUES (?, ?, ?, ?, ?, ?)",
                                    [(recording_id, *row) for row in samples])
            if points:
                self.db.executemany("INSERT INTO rec_points VALUES (?, ?, ?, ?, ?, ?)",
                                    [(recording_id, p.metric, p.t, p.value, int(p.tags.get("pid", 0)),
                                      json.dumps(p.tags, sort_keys=True)) for p in points])
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise RecordingError(self.explain(exc)) from None

    def set_started(self, recording_id: int, started: float) -> None:
        """The moment the program started (epoch seconds): windows count from it."""
        self._write("UPDATE recordings SET started = ? WHERE id = ?", (started, recording_id))

    def finish(self, recording_id: int, status: str, returncode: int | None, notes: list[str]) -> None:
        """Mark a recording ended."""
        self._write("UPDATE recordings SET ended = ?, status = ?, returncode = ?, notes_json = ? WHERE id = ?",
                    (time.time(), status, returncode, json.dumps(notes), recording_id))

    # ------------------------------------------------------------------ reading
    def recordings(self) -> list[Recording]:
        """Every recording, oldest first."""
        try:
            rows = self.db.execute("SELECT id FROM recordings ORDER BY id").fetchall()
        except sqlite3.Error as exc:
            raise RecordingError(self.explain(exc)) from None
        return [self.recording(row[0]) for row in rows]

    def resolve(self, text: str) -> Recording:
        """A recording by id, or ``last``."""
        if text == "last":
            row = self.db.execute("SELECT MAX(id) FROM recordings").fetchone()
            if row is None or row[0] is None:
                raise RecordingError(f"{self.path}: no recording yet; run mantispy record -- SCRIPT first")
            return self.recording(int(row[0]))
        if not text.isdigit():
            raise RecordingError(f"{text!r}: a recording is named by its number or 'last' (mantispy recordings lists them)")
        return self.recording(int(text))

    def recording(self, recording_id: int) -> Recording:
        """One recording; raises RecordingError for an unknown id."""
        try:
            row = self.db.execute(
                "SELECT id, command_json, started, ended, status, returncode, host, rate, interval, mode, sampler, "
                "run_id, recorder_pid, notes_json, cwd, library_json FROM recordings WHERE id = ?", (recording_id,)).fetchone()
        except sqlite3.Error as exc:
            raise RecordingError(self.explain(exc)) from None
        if row is None:
            raise RecordingError(f"{self.path}: no recording {recording_id}; mantispy recordings --store {self.path} lists them")
        status = row[4]
        if status == "recording" and not _alive(row[12]):
            status = "incomplete"
        try:
            command, notes, library = json.loads(row[1]), json.loads(row[13]), json.loads(row[15] or "[]")
        except ValueError:
            raise RecordingError(f"{self.path}: recording {recording_id} is damaged (command, notes or library paths "
                                 "not JSON); record it again") from None
        if not isinstance(library, list) or not all(isinstance(path, str) for path in library):
            raise RecordingError(f"{self.path}: recording {recording_id} is damaged (library paths not a list of "
                                 "folders); record it again")
        ended = row[3]
        if ended is None and status == "incomplete":
            last = self.db.execute("SELECT MAX(t) FROM rec_samples WHERE recording_id = ?", (recording_id,)).fetchone()
            ended = last[0] if last and last[0] is not None else None
        return Recording(id=row[0], command=command, started=row[2], ended=ended, status=status, returncode=row[5],
                         host=row[6], rate=row[7], interval=row[8], mode=row[9], sampler=row[10], run_id=row[11],
                         notes=notes, cwd=row[14] or "", library=library)

    def frames(self, recording_id: int) -> dict[int, tuple[Frame, ...]]:
        """Stack id -> its frames, outermost first."""
        rows = self.db.execute("SELECT id, frames_json FROM rec_stacks WHERE recording_id = ?", (recording_id,))
        return {sid: tuple(Frame.parse(text) for text in json.loads(frames)) for sid, frames in rows}

    def samples(self, recording: Recording, window: Window = WHOLE) -> Iterator[Sample]:
        """The samples inside ``window`` (seconds from the recording's start)."""
        where, args = _where(recording, window, thread=True)
        for row in self.db.execute("SELECT t, pid, tid, stack_id, weight FROM rec_samples WHERE " + where, args):
            yield Sample(*row)

    def stack_weights(self, recording: Recording, window: Window = WHOLE) -> tuple[dict[int, float], int]:
        """({stack id: summed weight}, samples) inside ``window``, summed by SQLite."""
        where, args = _where(recording, window, thread=True)
        weights, count = {}, 0
        try:
            for stack, weight, n in self.db.execute(
                    "SELECT stack_id, SUM(weight), COUNT(*) FROM rec_samples WHERE " + where + " GROUP BY stack_id", args):
                weights[stack] = weight
                count += n
        except sqlite3.Error as exc:
            raise RecordingError(self.explain(exc)) from None
        return weights, count

    def points(self, recording: Recording, metric: str | None = None, window: Window = WHOLE) -> list[Point]:
        """The time series points inside ``window``, of one metric (or every one)."""
        where, args = _where(recording, window, thread=False)
        sql = "SELECT metric, t, value, tags_json FROM rec_points WHERE " + where
        if metric is not None:
            sql += " AND metric = ?"
            args.append(metric)
        sql += " ORDER BY t"
        return [Point(m, t, v, json.loads(tags)) for m, t, v, tags in self.db.execute(sql, args)]

    def save_phases(self, recording_id: int, options: dict, phases: list[dict]) -> None:
        """Store a recording's phases (replacing earlier ones): what mantispy phases found, and how."""
        self._write("INSERT OR REPLACE INTO rec_phases VALUES (?, ?, ?)",
                    (recording_id, json.dumps(options), json.dumps(phases)))

    def phases(self, recording_id: int) -> tuple[dict, list[dict]] | None:
        """(options, phases) stored for a recording, or None."""
        row = self.db.execute("SELECT options_json, phases_json FROM rec_phases WHERE recording_id = ?",
                              (recording_id,)).fetchone()
        return None if row is None else (json.loads(row[0]), json.loads(row[1]))

    def metrics(self, recording_id: int) -> list[str]:
        """The metric names a recording has points of."""
        rows = self.db.execute("SELECT DISTINCT metric FROM rec_points WHERE recording_id = ? ORDER BY metric",
                               (recording_id,))
        return [row[0] for row in rows]

    def counts(self, recording_id: int) -> tuple[int, int, int]:
        """(samples, points, processes) of a recording."""
        samples, pids = self.db.execute("SELECT COUNT(*), COUNT(DISTINCT pid) FROM rec_samples WHERE recording_id = ?",
                                        (recording_id,)).fetchone()
        points = self.db.execute("SELECT COUNT(*) FROM rec_points WHERE recording_id = ?", (recording_id,)).fetchone()[0]
        return int(samples), int(points), int(pids)


def _where(recording: Recording, window: Window, thread: bool) -> tuple[str, list]:
    """The WHERE clause (and its arguments) of a window of a recording's rows."""
    sql = "recording_id = ? AND t >= ? AND t <= ?"
    args: list = [recording.id, recording.started + window.start,
                  recording.started + window.end if not math.isinf(window.end) else 1e300]
    if window.pid is not None:
        sql += " AND pid = ?"
        args.append(window.pid)
    if thread and window.tid is not None:
        sql += " AND tid = ?"
        args.append(window.tid)
    return sql, args


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
