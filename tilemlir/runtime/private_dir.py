"""Directories whose contents only this user can change: where the runtime keeps what it runs.

Threat model. The disk cache holds cubins the GPU runs and the native
launcher, a shared library this process imports and so runs with this
user's rights. Whoever can put a file in such a directory, or replace a
directory on the way to it, chooses that code. A directory is private when
it and every directory above it (after resolving symbolic links, and every
link on the way) is owned by this user or root and writable by no one else:
not by every user unless the sticky bit stops them from renaming or removing
what they do not own (as on /tmp), and not by its group unless the sticky
bit is set or the group is this user's private group (named after the user,
no other members: what a umask of 002 gives on systems with user private
groups). The runtime creates what is missing with mode 0700.

Not defended against: this user's own processes and root, which can change
tilemlir's own files as well; files a private directory got from elsewhere
(a restored CI cache, a copied home) pass this check, which is why the
native launcher's hash is also recorded outside the cache (native.py).
"""

from __future__ import annotations

import grp
import logging
import os
import pwd
import stat
from pathlib import Path

log = logging.getLogger("tilemlir.runtime")

_warned: set[str] = set()


def private_dir(path: Path, consequence: str) -> Path | None:
    """`path`, created (mode 0700) where missing, when it is private; else None, after a warning
    (once per process and path) that names the reason and `consequence`."""
    try:
        existing = path
        while not os.path.lexists(existing):
            existing = existing.parent
        reason = unsafe_reason(existing)  # nothing is created inside a directory others may change
        if reason is None:
            _make(path)
            reason = unsafe_reason(path)
    except OSError as exc:
        reason = f"it cannot be created or read: {exc}"
    if reason is None:
        return path
    if str(path) not in _warned:
        _warned.add(str(path))
        log.warning("%s is not private (%s); %s", path, reason, consequence)
    return None


def unsafe_reason(path: Path) -> str | None:
    """Why someone other than this user or root could change what directory `path` holds, or None."""
    path = Path(os.path.abspath(path))
    for component in (path, *path.parents):
        info = os.lstat(component)
        if stat.S_ISLNK(info.st_mode) and not _trusted_owner(info):
            return f"the symbolic link {component} belongs to uid {info.st_uid}"
    real = path.resolve()
    for directory in (real, *real.parents):
        reason = _writers(directory, os.stat(directory))
        if reason is not None:
            return reason
    return None


def private_file(path: Path) -> bool:
    """Whether `path` is a regular file (not a link) of this user or root that no one else may write."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and _writers(path, info) is None


def _make(path: Path) -> None:
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)  # another process may create it first


def _trusted_owner(info: os.stat_result) -> bool:
    return info.st_uid in (os.geteuid(), 0)


def _writers(directory: Path, info: os.stat_result) -> str | None:
    """Who besides this user and root may change `directory`'s entries, or None."""
    if not _trusted_owner(info):
        return f"{directory} belongs to uid {info.st_uid}"
    sticky = info.st_mode & stat.S_ISVTX
    if info.st_mode & stat.S_IWOTH and not sticky:
        return f"every user may write {directory} (mode {stat.S_IMODE(info.st_mode):o})"
    if info.st_mode & stat.S_IWGRP and not sticky and not _private_group(info.st_gid):
        return f"group {_group_name(info.st_gid)} may write {directory} (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _private_group(gid: int) -> bool:
    try:
        user = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return group.gr_name == user.pw_name and user.pw_gid == gid and set(group.gr_mem) <= {user.pw_name}


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
