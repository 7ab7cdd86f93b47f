"""The launcher that contains one untrusted program (executor.py runs it; stdlib only, run as `python -I -S`).

    python -I -S sandbox.py CONFIG.json STATUS_FD

Layers, each applied where the platform allows and reported in the status line when it is not:

- namespaces: a new user namespace (so no privilege is needed), network namespace (only a loopback
  that is down: no local listener, no outside host, no abstract unix socket of the host) and PID
  namespace. The program runs as PID 2 under a small init (PID 1); when init exits, the kernel kills
  every process left in the namespace, `setsid()` grandchildren included. Without a PID namespace,
  this launcher is a child subreaper and kills every descendant it inherits.
- limits (the program and its children): CPU seconds, address space, file size, no core dumps, and
  the number of processes: RLIMIT_NPROC (counted in the sandbox's own user namespace, but never
  binding root), and a pids cgroup with `pids.max` where the harness could make one (root).
- Landlock (Linux 5.13+): writes, file creation, removal, renames and links only beneath the temp
  dir (plus `/dev/null`); TCP bind and connect refused (ABI 4+) even without a network namespace;
  signals and abstract unix sockets scoped to the sandbox (ABI 6+). Reads are not restricted.
- the wall-clock timeout is enforced here, then by the harness as a backstop.

One JSON line goes to STATUS_FD at the end: {"exit": code} or {"signal": n}, "timeout", and
"containment": what each layer achieved. The program never sees that descriptor.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import signal
import sys
import time

CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x10000000, 0x40000000, 0x20000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION, LANDLOCK_RULE_PATH_BENEATH = 1, 1
SANDBOX_UID = 1000  # the program's uid inside its user namespace (not root: no capabilities after exec)

_libc = ctypes.CDLL(None, use_errno=True)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _errno_text() -> str:
    return os.strerror(ctypes.get_errno())


def _prctl(option: int, value: int) -> None:
    _libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter_namespaces() -> dict:
    """New user, network and PID namespaces, or what could be had; says which."""
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID) == 0:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{SANDBOX_UID} {uid} 1")
        _write("/proc/self/gid_map", f"{SANDBOX_UID} {gid} 1")
        return {"user": True, "network": True, "pid": True}
    why = _errno_text()
    if _libc.unshare(CLONE_NEWNET | CLONE_NEWPID) == 0:  # root where user namespaces are off
        return {"user": False, "network": True, "pid": True, "user_error": why}
    return {"user": False, "network": False, "pid": False, "user_error": why, "error": _errno_text()}


def join_cgroup(path: str | None) -> bool:
    """Move this launcher (so all it starts) into the pids cgroup the harness made for it, before any namespace:
    its pids.max bounds the sandbox's processes even for root, whom RLIMIT_NPROC never binds."""
    if not path:
        return False
    try:
        _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
        return True
    except OSError:
        return False


def _fs_rights(abi: int) -> int:
    """Every right that changes the file system: WRITE_FILE, REMOVE_DIR .. MAKE_SYM, and by ABI REFER,
    TRUNCATE, IOCTL_DEV. EXECUTE, READ_FILE and READ_DIR are not handled, so reads stay allowed."""
    rights = 1 << 1
    for bit in range(4, 13):
        rights |= 1 << bit
    for abi_from, bit in ((2, 13), (3, 14), (5, 15)):
        if abi >= abi_from:
            rights |= 1 << bit
    return rights


def landlock(writable: list[str]) -> dict:
    """Restrict this process and its future children: writes beneath `writable` only, no TCP, scoped signals."""
    abi = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 0:
        return {"abi": 0, "error": f"Landlock is not available: {_errno_text()}"}
    fs = _fs_rights(abi)
    attr = _RulesetAttr(handled_access_fs=fs, handled_access_net=0b11 if abi >= 4 else 0,  # BIND_TCP | CONNECT_TCP
                        scoped=0b11 if abi >= 6 else 0)  # ABSTRACT_UNIX_SOCKET | SIGNAL
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return {"abi": abi, "error": f"landlock_create_ruleset: {_errno_text()}"}
    try:
        for path, rights in [(p, fs) for p in writable] + [("/dev/null", (1 << 1) | (fs & (1 << 14)))]:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
                if _libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                    return {"abi": abi, "error": f"landlock_add_rule {path}: {_errno_text()}"}
            finally:
                os.close(fd)
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0):
            return {"abi": abi, "error": f"landlock_restrict_self: {_errno_text()}"}
    finally:
        os.close(ruleset)
    return {"abi": abi, "writes": True, "tcp": abi >= 4, "scoped": abi >= 6}


def set_limits(cfg: dict) -> None:
    for name, value in (("RLIMIT_CPU", cfg["cpu_s"]), ("RLIMIT_AS", cfg["memory_bytes"]),
                        ("RLIMIT_FSIZE", cfg["file_bytes"]), ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", cfg["processes"])):
        hard = value + 1 if name == "RLIMIT_CPU" else value  # SIGXCPU at the soft limit, SIGKILL at the hard
        resource.setrlimit(getattr(resource, name), (value, hard))


def _exec_program(cfg: dict) -> None:
    os.execve(cfg["python"], [cfg["python"], "-I", "-S", cfg["program"]], cfg["env"])


def _init(cfg: dict) -> None:
    """PID 1 of the sandbox's PID namespace: start the program, reap everything, exit as the program did."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    program = os.fork()
    if program == 0:
        _exec_program(cfg)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(125)
        if pid == program:  # exiting now makes the kernel kill every other process of the namespace
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _wait(pid: int, timeout_s: float) -> int | None:
    """The wait status of child `pid`, or None once `timeout_s` passed."""
    deadline = time.monotonic() + timeout_s
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(left, 0.01))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me:
                found.append(int(entry))
    return found


def kill_descendants() -> int:
    """As a child subreaper every orphaned descendant becomes our child: kill and reap until none is left."""
    killed = 0
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return killed


def main() -> int:
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    status_fd = int(sys.argv[2])
    os.set_inheritable(status_fd, False)  # the program never gets it
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the harness died: so do we (and with us the namespace)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    containment = {"cgroup": join_cgroup(cfg.get("cgroup"))}
    ns = enter_namespaces()
    containment["namespaces"] = ns
    child = os.fork()
    if child == 0:
        try:
            set_limits(cfg)
            lock = landlock(cfg["writable"])
            os.write(status_fd, (json.dumps({"landlock": lock}) + "\n").encode())
            os.close(status_fd)
            _init(cfg) if ns["pid"] else _exec_program(cfg)
        except BaseException as exc:  # noqa: BLE001 - say why on stderr, never run the program unconfined
            os.write(2, f"sandbox: {type(exc).__name__}: {exc}\n".encode())
        os._exit(125)
    status = _wait(child, cfg["timeout_s"])
    timeout = status is None
    if timeout:
        os.kill(child, signal.SIGKILL)  # PID 1 of the namespace: the kernel kills all the rest
        _, status = os.waitpid(child, 0)
    leftovers = kill_descendants()  # nothing with a PID namespace; the subreaper's catch without one
    result = {"timeout": timeout, "leftovers_killed": leftovers, "containment": containment}
    if os.WIFSIGNALED(status):
        result["signal"] = os.WTERMSIG(status)
    else:
        result["exit"] = os.WEXITSTATUS(status)
    os.write(status_fd, (json.dumps(result) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
