//! Starting a job's process without copying the agent: `clone(CLONE_VM | CLONE_VFORK)`, as
//! `posix_spawn` does, with a child step `posix_spawn` has no attribute for, `PR_SET_PDEATHSIG`.
//! A fork copied the agent's page tables for each job, and every page either side then wrote
//! was copied again (with a TLB shootdown across the agent's threads): a third of the agent's
//! CPU in a drain of short jobs. Here the child runs in the agent's memory, on a stack of its
//! own, while the spawning thread waits, until it execs or exits; so it only makes system calls
//! on what the parent prepared (no allocation, no lock: another thread of the agent may hold
//! the allocator's).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The child's stack: what `execve`'s and the other calls' frames need, with room to spare.
const STACK_BYTES: usize = 64 * 1024;

/// What a started process gives the agent: its pid (which is also its session and process
/// group), a pidfd (readable when it ends) and the read ends of its stdout and stderr.
pub struct Started {
    pub pid: i32,
    pub pidfd: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Everything the child reads, prepared by the parent. The pointers point into `_strings`.
struct Plan {
    path: CString,
    argv: Vec<*const libc::c_char>,
    /// `sh PATH ARGS...` for a file that has the execute bit but is not a binary nor has `#!`
    /// (ENOEXEC), run by the shell as `execvp` does.
    sh_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    /// stdin, stdout, stderr of the child, each above 2 (so that no dup2 overwrites another).
    stdio: [libc::c_int; 3],
    parent: libc::pid_t,
    /// Written by the child when a step failed: its errno (the child then exits 127).
    errno: libc::c_int,
    _strings: Vec<CString>,
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a command, argument or environment variable holds a NUL byte",
        )
    })
}

fn null_terminated(strings: &[&CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Where `program` is: itself when it names a path, else the first executable file of that
/// name in the directories of `path` (the child's PATH), as `execvp` searches them from the job's
/// working folder (an empty or relative directory is in it).
fn resolve(program: &str, path: Option<&OsStr>, cwd: Option<&str>) -> io::Result<PathBuf> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let dirs = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    let folder = Path::new(cwd.unwrap_or("."));
    let mut denied = false;
    for dir in dirs.as_bytes().split(|&b| b == b':') {
        let candidate = folder.join(OsStr::from_bytes(dir)).join(program);
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let c = cstring(candidate.as_os_str().as_bytes())?;
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
            return Ok(candidate);
        }
        denied = true;
    }
    Err(if denied {
        io::Error::from_raw_os_error(libc::EACCES)
    } else {
        io::Error::from(io::ErrorKind::NotFound)
    })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(read)?, above_stdio(write)?))
}

/// `fd` moved above 2, if it is one of them (the agent's own stdio was closed).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

fn dev_null() -> io::Result<libc::c_int> {
    static DEV_NULL: OnceLock<OwnedFd> = OnceLock::new();
    if let Some(fd) = DEV_NULL.get() {
        return Ok(fd.as_raw_fd());
    }
    let file = std::fs::File::open("/dev/null")?;
    Ok(DEV_NULL
        .get_or_init(|| above_stdio(file.into()).expect("a descriptor for /dev/null"))
        .as_raw_fd())
}

/// Starts `program` with `args` (`args[0]` is not given: it is `program`), the agent's
/// environment with `env` set over it, in `cwd`: in a session and process group of its own, no
/// signal blocked, SIGPIPE at its default, killed (SIGKILL) when the calling thread ends, stdin
/// from /dev/null, stdout and stderr to pipes. Returns once the child has exec'd; a step that
/// failed before (the command not found, the folder gone) is the error.
pub fn launch(
    program: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&str>,
) -> io::Result<Started> {
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(name, _)| !env.iter().any(|(n, _)| OsStr::new(n) == name))
        .collect();
    vars.extend(env.iter().map(|(n, v)| (n.into(), v.into())));
    let path_var = vars
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.as_os_str());
    let path = resolve(program, path_var, cwd)?;

    let path_c = cstring(path.as_os_str().as_bytes())?;
    let program_c = cstring(program.as_bytes())?;
    let args_c = args
        .iter()
        .map(|a| cstring(a.as_bytes()))
        .collect::<io::Result<Vec<_>>>()?;
    let env_c = vars
        .iter()
        .map(|(n, v)| {
            let mut entry = n.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(v.as_bytes());
            cstring(&entry)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let sh_c = cstring(b"/bin/sh")?;
    let cwd_c = cwd.map(|c| cstring(c.as_bytes())).transpose()?;

    let argv = null_terminated(
        &std::iter::once(&program_c)
            .chain(&args_c)
            .collect::<Vec<_>>(),
    );
    let sh_argv = null_terminated(
        &[&sh_c, &path_c]
            .into_iter()
            .chain(&args_c)
            .collect::<Vec<_>>(),
    );
    let envp = null_terminated(&env_c.iter().collect::<Vec<_>>());

    let (stdout_read, stdout_write) = pipe()?;
    let (stderr_read, stderr_write) = pipe()?;
    let mut strings = args_c;
    strings.extend(env_c);
    strings.extend([program_c, sh_c]);
    let mut plan = Plan {
        path: path_c,
        argv,
        sh_argv,
        envp,
        cwd: cwd_c,
        stdio: [
            dev_null()?,
            stdout_write.as_raw_fd(),
            stderr_write.as_raw_fd(),
        ],
        parent: unsafe { libc::getpid() },
        errno: 0,
        _strings: strings,
    };
    let mut stack = vec![0u8; STACK_BYTES];
    let pid = unsafe {
        // Stacks grow down on every architecture Linux runs this on; 16-byte aligned.
        let top = (stack.as_mut_ptr().add(STACK_BYTES) as usize & !15) as *mut libc::c_void;
        // No signal handler may run in the child, which shares the agent's memory: everything
        // is blocked around the clone, and the child unblocks just before it execs.
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &mut plan as *mut Plan as *mut libc::c_void,
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(clone_error);
        }
        pid
    };
    drop(stack);
    // The write ends are the child's alone now: its exit closes the pipes.
    drop(stdout_write);
    drop(stderr_write);
    // Written by the child, in this memory, while this thread waited.
    let errno = unsafe { std::ptr::read_volatile(&plan.errno) };
    if errno != 0 {
        unsafe { libc::waitpid(pid, &mut 0, 0) };
        return Err(io::Error::from_raw_os_error(errno));
    }
    // Linux 5.3 and later.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if pidfd < 0 {
        let error = io::Error::last_os_error();
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut 0, 0);
        }
        return Err(error);
    }
    Ok(Started {
        pid,
        pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
        stdout: stdout_read,
        stderr: stderr_read,
    })
}

/// The child, until it execs: only system calls on what `plan` holds. A failed step writes its
/// errno for the parent, which is waiting (CLONE_VFORK), and exits 127.
extern "C" fn child(plan: *mut libc::c_void) -> libc::c_int {
    let plan = unsafe { &mut *(plan as *mut Plan) };
    let failed = |plan: &mut Plan| -> libc::c_int {
        plan.errno = unsafe { *libc::__errno_location() };
        if plan.errno == 0 {
            plan.errno = libc::ESRCH;
        }
        unsafe { libc::_exit(127) }
    };
    unsafe {
        // A session and process group of its own: the agent ends the whole group, and a
        // terminal's signals do not reach it.
        if libc::setsid() < 0 {
            return failed(plan);
        }
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) < 0
        {
            return failed(plan);
        }
        // The agent died before prctl: nobody would kill this one.
        if libc::getppid() != plan.parent {
            *libc::__errno_location() = libc::ESRCH;
            return failed(plan);
        }
        for (fd, target) in plan.stdio.iter().zip(0..) {
            if libc::dup2(*fd, target) < 0 {
                return failed(plan);
            }
        }
        if let Some(cwd) = &plan.cwd {
            if libc::chdir(cwd.as_ptr()) < 0 {
                return failed(plan);
            }
        }
        // The agent ignores SIGPIPE (as Rust programs do) and blocks SIGTERM and SIGINT (a
        // thread sigwaits them): an ignored signal stays ignored across exec, a blocked one
        // blocked, and `sleep` would not end at a cancel.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(plan.path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        if *libc::__errno_location() == libc::ENOEXEC {
            libc::execve(
                *plan.sh_argv.as_ptr(),
                plan.sh_argv.as_ptr(),
                plan.envp.as_ptr(),
            );
        }
        failed(plan)
    }
}
