"""private_dir: which directories only this user (or root) can change, and what the caches do otherwise."""

import logging
import os

import pytest

from tilemlir.runtime.private_dir import private_dir, private_file, unsafe_reason

OTHER_UID = OTHER_GID = 65534  # nobody / nogroup
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


def test_missing_directories_are_created_private(tmp_path):
    path = tmp_path / "a" / "b"
    assert private_dir(path, "unused") == path
    assert (path.stat().st_mode & 0o777, (tmp_path / "a").stat().st_mode & 0o777) == (0o700, 0o700)


def test_a_directory_every_user_may_write_is_refused_unless_sticky(tmp_path, caplog):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert unsafe_reason(shared / "..") is None
    assert unsafe_reason(shared) == f"every user may write {shared} (mode 777)"
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        assert private_dir(shared / "cache", "doing without") is None
        assert private_dir(shared / "cache", "doing without") is None
    assert [r.message for r in caplog.records] == [
        f"{shared / 'cache'} is not private (every user may write {shared} (mode 777)); doing without"]
    assert not (shared / "cache").exists()  # nothing is created inside it
    shared.chmod(0o1777)  # as /tmp: others cannot rename or remove what is not theirs
    assert private_dir(shared / "cache", "unused") == shared / "cache"


@as_root
def test_a_directory_or_link_of_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, -1)
    assert unsafe_reason(theirs / ".." / "theirs") == f"{theirs} belongs to uid {OTHER_UID}"
    assert private_dir(theirs / "cache", "doing without") is None
    ours = tmp_path / "ours"
    ours.mkdir()
    link = tmp_path / "link"
    link.symlink_to(ours)
    assert unsafe_reason(link) is None
    os.lchown(link, OTHER_UID, -1)
    assert unsafe_reason(link) == f"the symbolic link {link} belongs to uid {OTHER_UID}"
    assert private_dir(link / "cache", "doing without") is None and not (ours / "cache").exists()


@as_root
def test_group_write_is_refused_unless_the_group_is_the_users_own(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    team.chmod(0o770)
    assert unsafe_reason(team) is None  # root's group: root's private group
    os.chown(team, -1, OTHER_GID)
    assert unsafe_reason(team) == f"group nogroup may write {team} (mode 770)"
    file = tmp_path / "file"
    file.write_text("x")
    os.chown(file, -1, OTHER_GID)
    assert private_file(file)
    file.chmod(0o664)
    assert not private_file(file)


def test_a_cache_dir_others_may_write_is_neither_read_nor_written(tmp_path, monkeypatch, caplog):
    from support import AXPY_SIGNATURE, AXPY_SOURCE
    from tilemlir.runtime import builder, cache

    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    kernel = builder.build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    key = cache.make_key(AXPY_SOURCE, kernel.options, extra=AXPY_SIGNATURE.to_json())
    assert cache.lookup(key) is not None
    (tmp_path / "cache").chmod(0o777)
    compiles = []
    monkeypatch.setattr(builder, "compile_cuda", lambda *a: compiles.append(a) or kernel.cubin)
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        builder.build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
        assert cache.store(key, AXPY_SOURCE, kernel.cubin, AXPY_SIGNATURE, kernel.options) is None
    assert len(compiles) == 1
    assert any("not using the disk cache there" in r.message for r in caplog.records)


def _create(barrier, path, results):
    barrier.wait()
    results.put(private_dir(path, "doing without") == path)


def test_processes_creating_one_directory_at_once_all_get_it(tmp_path):
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for trial in range(40):  # the losers of a mkdir race saw an error in about 1 creation of 25
        barrier, results = context.Barrier(4), context.Queue()
        racers = [context.Process(target=_create, args=(barrier, tmp_path / str(trial) / "a" / "b", results))
                  for _ in range(4)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(timeout=60)
        assert [results.get(timeout=10) for _ in racers] == [True] * 4
