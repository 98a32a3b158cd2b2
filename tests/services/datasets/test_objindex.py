"""The object index (objindex.py) on a real database: a pack's rows go in with one
``executemany``; the answer names exactly the objects that were new, whatever was there before.
"""

from sqlalchemy import func, select

from yitong_services.core.db import Database
from yitong_services.datasets.models import Pack, StoredObject
from yitong_services.datasets.objindex import index, index_rows, locate, storage_lock


def h(i: int) -> str:
    return f"{i:064x}"


def _db(db_url: str) -> Database:
    db = Database(db_url)
    db.upgrade()
    return db


def _packs(db: Database) -> set[str]:
    with db.session() as s:
        return set(s.scalars(select(Pack.id)))


def test_a_pack_of_new_objects_is_indexed_whole(db_url):
    db = _db(db_url)
    rows = [(h(i), 10 + i, "p1", 40 * (i + 1), "alice") for i in range(3)]
    with storage_lock(db) as s:
        assert index_rows(s, list(reversed(rows)), pack=("p1", 500)) == [h(0), h(1), h(2)]
    with db.session() as s:
        assert locate(s, [h(1)])[h(1)] == (h(1), 11, "p1", 80)
        assert s.scalar(select(StoredObject.uploader).where(StoredObject.hash == h(2))) == "alice"
        assert s.scalar(select(StoredObject.created).where(StoredObject.hash == h(2))) is not None
    assert _packs(db) == {"p1"}


def test_objects_stored_before_are_left_alone_and_not_named(db_url):
    db = _db(db_url)
    with storage_lock(db) as s:
        index_rows(s, [(h(1), 11, "p1", 40, "alice")], pack=("p1", 51))
    # h(1) again (with another size: the first row stands), h(5) twice within the pack
    rows = [(h(1), 99, "p2", 40, "bob"), (h(5), 15, "p2", 120, "bob"), (h(5), 15, "p2", 175, "bob")]
    with storage_lock(db) as s:
        assert index_rows(s, rows, pack=("p2", 300)) == [h(5)]
    with db.session() as s:
        found = locate(s, [h(1), h(5)])
    assert found[h(1)] == (h(1), 11, "p1", 40)
    assert found[h(5)] == (h(5), 15, "p2", 120)
    assert _packs(db) == {"p1", "p2"}


def test_a_pack_with_nothing_new_leaves_no_pack_row(db_url):
    db = _db(db_url)
    with storage_lock(db) as s:
        index_rows(s, [(h(1), 11, "p1", 40, "alice")], pack=("p1", 51))
    with storage_lock(db) as s:
        assert index_rows(s, [(h(1), 11, "p2", 40, "bob")], pack=("p2", 51)) == []
    assert _packs(db) == {"p1"}


def test_loose_objects_as_dicts(db_url):
    db = _db(db_url)
    row = {"hash": h(7), "size": 2 << 20, "pack": None, "offset": None, "uploader": "carol"}
    with storage_lock(db) as s:
        assert index(s, [row]) == [row]
    with storage_lock(db) as s:
        assert index(s, [row | {"uploader": "dave"}]) == []
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(StoredObject)) == 1
        assert locate(s, [h(7)])[h(7)] == (h(7), 2 << 20, None, None)
