"""Dataflow profiles in a SQLite store: one row per recorded job, its profile JSON beside a summary.

The table lives in the recordings' store (``.mantis/record.db`` by default, or a campaign's store), so a
job's profile sits beside the program recordings of the same project. A profile is written once, whole.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from mantispy.store import explain_sqlite, not_a_database

from .types import DataflowProfile, ProfileError, profile_from_json

_SCHEMA = """
CREATE TABLE IF NOT EXISTS dataflow_profiles (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    command_json TEXT NOT NULL,
    complete INTEGER NOT NULL,
    tasks INTEGER NOT NULL,
    wall_s REAL NOT NULL,
    profile_json TEXT NOT NULL
);
"""


class DataflowStoreError(Exception):
    """A store that cannot be used, or a profile it does not hold; one line naming the file and the fix."""


@dataclass(frozen=True)
class StoredProfile:
    """One row of the table: what ``mantispy dataflow list`` shows."""

    id: int
    started: float
    command: list[str]
    complete: bool
    tasks: int
    wall_s: float


class DataflowStore:
    """Read/write access to the dataflow profiles of one store file. Use as a context manager."""

    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise DataflowStoreError(f"{self.path}: no such store; record a job with `mantispy dataflow record` "
                                     "first or pass --store")
        if not create and self.path.is_file() and not_a_database(self.path):
            raise DataflowStoreError(f"{self.path}: not a mantispy store or corrupt (an empty file); give the store the job was "
                                     "recorded in with --store")
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise DataflowStoreError(explain_sqlite(self.path, exc)) from None

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> DataflowStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, profile: DataflowProfile) -> int:
        """Store a profile; returns its id."""
        try:
            cursor = self.db.execute(
                "INSERT INTO dataflow_profiles (started, command_json, complete, tasks, wall_s, profile_json) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (profile.started, json.dumps(profile.command), int(profile.complete), len(profile.tasks),
                 profile.wall_s, profile.to_json()))
        except sqlite3.Error as exc:
            raise DataflowStoreError(explain_sqlite(self.path, exc)) from None
        return int(cursor.lastrowid or 0)

    def list(self) -> list[StoredProfile]:
        """Every stored profile, oldest first."""
        rows = self.db.execute("SELECT id, started, command_json, complete, tasks, wall_s FROM dataflow_profiles "
                               "ORDER BY id").fetchall()
        return [StoredProfile(r[0], r[1], json.loads(r[2]), bool(r[3]), r[4], r[5]) for r in rows]

    def get(self, text: str) -> tuple[int, DataflowProfile]:
        """The profile named by its id or ``last``."""
        if text == "last":
            row = self.db.execute("SELECT id, profile_json FROM dataflow_profiles ORDER BY id DESC LIMIT 1").fetchone()
        elif text.isdigit():
            row = self.db.execute("SELECT id, profile_json FROM dataflow_profiles WHERE id = ?", (int(text),)).fetchone()
        else:
            raise DataflowStoreError(f"{text}: not a profile file, an id or 'last'")
        if row is None:
            raise DataflowStoreError(f"{self.path}: holds no dataflow profile {text}; `mantispy dataflow list` shows them")
        try:
            return int(row[0]), profile_from_json(row[1])
        except ProfileError as exc:
            raise DataflowStoreError(f"{self.path}: profile {row[0]}: {exc}") from None
