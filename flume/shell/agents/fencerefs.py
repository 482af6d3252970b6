"""A sandboxed agent's branch and objects, kept apart from the repository's and carried over.

Theory of operation. git writes a branch by making ``<ref>.lock`` in the branch's folder and
renaming it over the ref, so an agent that may commit on ``sb/mine`` must write the folder
``refs/heads/sb``: there it could also move ``sb/victim``, another place's branch, or make a new
one beside it. And git's object folder is every branch's history: an agent that may write it
may delete its packs. So a fenced agent writes neither:

- **Its branch folder is a stand-in.** Inside the fence, ``refs/heads/<prefix>`` (and its
  reflogs' folder) is a folder of its own session's (:attr:`Mirror.refs`), holding its branch
  alone (and a copy of its base when the base is beside it, a lane's run branch). The agent
  commits there as git always does.
- **Its objects are its own.** Inside, ``GIT_OBJECT_DIRECTORY`` names a folder of its own
  (:attr:`Mirror.objects`) and ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` the repository's, which it
  sees read-only: what it writes goes to its folder, what is there it reads.

:func:`settle`, run by the supervisor every tick for each live fenced agent (and once more when
it ends), carries the branch over both ways from what it last carried (:attr:`Mirror.mirrored`):

- the agent moved its branch (its stand-in differs from what was carried, the real one does
  not): each object it wrote is copied into the repository, checked first (its content must
  hash to its name; a pack is unpacked by git, which checks it), never over one there, and the
  real branch moved to its head with a compare-and-swap (``git update-ref NEW OLD``);
- flume (or a person) moved the real branch (a child's work merged into a lead's run branch):
  the stand-in is written to match, under git's own lock, so an agent's commit racing it fails
  as any lost race in git does, and commits nothing wrong;
- both moved: the one holding the other goes on; if neither holds the other, the real branch
  stays, and the agent's head is kept on a branch of its own (``<branch>.sandboxed-<sha>``),
  named in the supervisor's log: never lost.

The repository sees only the real branch: every observation of a head is of it, as for any
agent. What the agent cannot do is any harm beyond its own branch.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import zlib
from pathlib import Path

import attrs

from flume.core.ids import BranchName, Sha
from flume.shell.tools import git

_log = logging.getLogger("flume.supervisor")
#: An object id: 40 hex digits (SHA-1) or 64 (SHA-256).
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
#: The most of one loose object read at once to check it.
_MOST_OBJECT = 1 << 31


@attrs.frozen(kw_only=True)
class Mirror:
    """One fenced session's stand-ins for its branch's folders and for its objects."""

    #: The session's fence folder.
    folder: Path
    #: The repository's common git folder.
    common: Path
    #: The place's branch.
    branch: BranchName

    @property
    def refs(self) -> Path:
        """The stand-in seen at ``refs/heads/<prefix>`` inside."""
        return self.folder / "refs"

    @property
    def logs(self) -> Path:
        """The stand-in seen at ``logs/refs/heads/<prefix>`` inside."""
        return self.folder / "logs"

    @property
    def objects(self) -> Path:
        """The agent's own object folder (``GIT_OBJECT_DIRECTORY`` inside)."""
        return self.folder / "objects"

    @property
    def mirrored(self) -> Path:
        """The file holding the head last carried over, either way."""
        return self.folder / "mirrored"

    @property
    def ref(self) -> Path:
        """The agent's branch, in its stand-in folder."""
        return self.refs / self.branch.rsplit("/", 1)[-1]

    def real_folders(self) -> tuple[Path, Path]:
        """Where the stand-ins are seen: the branch's folders of refs and of reflogs."""
        prefix = self.branch.rsplit("/", 1)[0]
        return (
            self.common / "refs" / "heads" / prefix,
            self.common / "logs" / "refs" / "heads" / prefix,
        )


def prepare(mirror: Mirror, base: BranchName | None) -> None:
    """Make the stand-ins: the branch as it is now, its base beside it if it is, no objects.

    The real folders they are seen at are made too (a mount point must exist).
    """
    for folder in (mirror.refs, mirror.logs, mirror.objects / "info", *mirror.real_folders()):
        folder.mkdir(parents=True, exist_ok=True)
    repository = mirror.common
    head = git.resolve(repository, mirror.branch)
    if base is not None and base.rsplit("/", 1)[0] == mirror.branch.rsplit("/", 1)[0]:
        copied = git.resolve(repository, base)
        if copied is not None:
            _write(mirror.refs / base.rsplit("/", 1)[-1], copied)
    if head is not None:
        _write(mirror.ref, head)
        _write(mirror.mirrored, head)


def read(path: Path) -> Sha | None:
    """An object id a ref file holds, or None (no file, or not one id alone)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Sha(text) if _SHA.fullmatch(text) else None


def _write(path: Path, sha: str) -> bool:
    """Write a ref file as git does, under its lock (``<ref>.lock``); False if the lock is held."""
    lock = path.with_name(f"{path.name}.lock")
    try:
        descriptor = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(sha + "\n")
    lock.replace(path)
    return True


def settle(mirror: Mirror, real: Sha | None) -> Sha | None:
    """Carry the branch over (module doc); the real branch's head after. ``real``: it now.

    Cheap when nothing moved: two small files read. A branch gone outside (a person deleted it)
    is never made again from inside.
    """
    inside, carried = read(mirror.ref), read(mirror.mirrored)
    if inside is None or real is None:
        return real
    if inside == real:
        if carried != inside:
            _write(mirror.mirrored, inside)
        return real
    if real == carried:
        return _carry_in(mirror, inside, carried)
    if inside == carried:
        # Moved outside only: the stand-in follows (next tick if the agent holds git's lock).
        if _write(mirror.ref, real):
            _write(mirror.mirrored, real)
        return real
    return _both_moved(mirror, inside, real)


def _carry_in(mirror: Mirror, inside: Sha, carried: Sha) -> Sha | None:
    """The agent's head made the real branch's, its objects copied first."""
    repository = mirror.common
    copy_objects(mirror)
    if git.run(repository, "cat-file", "-t", inside).out.strip() != "commit":
        _log.warning("%s: the sandboxed branch names no commit (%s): not carried", mirror, inside)
        return carried
    ref = f"refs/heads/{mirror.branch}"
    moved = git.run(repository, "update-ref", "-m", "flume: sandboxed commit", ref, inside, carried)
    if not moved.ok:
        return git.resolve(repository, mirror.branch)
    _write(mirror.mirrored, inside)
    return inside


def _both_moved(mirror: Mirror, inside: Sha, real: Sha) -> Sha:
    """Both heads moved since the last carry: the one holding the other wins; none is lost."""
    repository = mirror.common
    copy_objects(mirror)
    if git.run(repository, "cat-file", "-t", inside).out.strip() == "commit":
        ref = f"refs/heads/{mirror.branch}"
        if git.is_ancestor(repository, real, inside):
            if git.run(repository, "update-ref", ref, inside, real).ok:
                _write(mirror.mirrored, inside)
                return inside
            return real
        if not git.is_ancestor(repository, inside, real):
            kept = f"{mirror.branch}.sandboxed-{inside[:12]}"
            git.run(repository, "update-ref", f"refs/heads/{kept}", inside)
            _log.warning(
                "%s moved both inside and outside its sandbox: its sandboxed head %s is kept on %s",
                mirror.branch,
                inside,
                kept,
            )
    if _write(mirror.ref, real):
        _write(mirror.mirrored, real)
    return real


def copy_objects(mirror: Mirror) -> int:
    """Copy the agent's objects into the repository, each checked; how many were copied.

    A loose object is copied only if its content hashes to its name and none of that name is
    there; a pack is unpacked by git (``unpack-objects``, which checks every object). Each is
    removed from the agent's folder once the repository holds it (it reads it there then).
    """
    real = mirror.common / "objects"
    sha256 = _object_format(mirror.common) == "sha256"
    copied = 0
    with contextlib.suppress(FileNotFoundError):
        for folder in sorted(mirror.objects.iterdir()):
            if len(folder.name) != 2 or not folder.is_dir():
                continue
            for each in sorted(folder.iterdir()):
                name = folder.name + each.name
                if _copy_loose(each, real / folder.name / each.name, name, sha256=sha256):
                    copied += 1
                with contextlib.suppress(OSError):
                    each.unlink()
    for pack in sorted((mirror.objects / "pack").glob("*.pack")):
        _copy_pack(pack, real / "pack", mirror.common)
    return copied


def _copy_loose(source: Path, target: Path, name: str, *, sha256: bool) -> bool:
    """One loose object copied if it is what its name says and the repository lacks it."""
    if not _SHA.fullmatch(name) or target.exists():
        return False
    try:
        data = source.read_bytes()
        content = zlib.decompressobj().decompress(data, _MOST_OBJECT)
    except (OSError, zlib.error):
        return False
    digest = hashlib.sha256(content) if sha256 else hashlib.sha1(content, usedforsecurity=False)
    header, _, body = content.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if (
        digest.hexdigest() != name
        or kind not in {b"commit", b"tree", b"blob", b"tag"}
        or not size.isdigit()
        or int(size) != len(body)
    ):
        _log.warning("a sandboxed agent's object %s is not what its name says: not copied", name)
        return False
    target.parent.mkdir(exist_ok=True)
    temporary = target.parent / f"tmp_obj_flume_{os.getpid()}_{name[:8]}"
    temporary.write_bytes(data)
    try:
        os.link(temporary, target)
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _copy_pack(pack: Path, real: Path, common: Path) -> None:
    """A pack the agent made (``git gc`` inside), checked by git and moved into the repository.

    ``git index-pack --strict`` reads every object of it and writes its index only if all are
    sound; the pack and its index are then moved in (a pack's name is its checksum: one there
    already of that name is the same).
    """
    index = pack.with_suffix(".idx.checked")
    checked = git.run(common, "index-pack", "--strict", "-o", str(index), str(pack))
    if checked.ok:
        real.mkdir(parents=True, exist_ok=True)
        if not (real / pack.name).exists():
            # The pack first: git skips a pack with no index, but an index with no pack fails.
            pack.replace(real / pack.name)
            index.replace(real / f"{pack.stem}.idx")
    else:
        _log.warning("a sandboxed agent's pack %s does not check: not copied", pack.name)
    for part in pack.parent.glob(pack.stem + ".*"):
        with contextlib.suppress(OSError):
            part.unlink()


def _object_format(common: Path) -> str:
    """The repository's object format (``extensions.objectFormat``): ``sha1`` unless named."""
    said = git.run(common, "config", "--file", str(common / "config"), "extensions.objectFormat")
    return said.out.strip().lower() or "sha1"
