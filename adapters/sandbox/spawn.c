/* treadle-spawn: start one command confined by a Landlock ruleset, born in its cgroup.
 *
 *     treadle-spawn 2 STATUS_FD RULESET_FD CGROUP_FD NETWORK CHANNEL_FD PORT -- PROGRAM ...
 *
 * "2" is the protocol: a helper built from another version of this file refuses to run.
 * RULESET_FD (or -1: no sandbox) is a ruleset treadle built; CGROUP_FD (or -1) an open
 * cgroup v2 folder; NETWORK the session's sandbox_network (on, off, allowlist, or
 * loopback and allowlist+loopback: with a user and network namespace of the command's
 * own, whose loopback it may use): under all but on a seccomp filter refuses every socket but Unix,
 * netlink and TCP ones (TCP is the ruleset's to refuse, by port), io_uring and TCP Fast
 * Open (a send with MSG_FASTOPEN connects without connect) (confine_exec.py installs the
 * same program). Under allowlist, CHANNEL_FD (or -1) is a
 * Unix socket to treadle and PORT its proxy's: see proxy_inside. STATUS_FD is the write end of a pipe treadle reads to
 * its end:
 *
 *   - "treadle sandbox: WHY": the ruleset could not be applied; nothing ran (exit 126);
 *   - "spawned PID": the command is PID, a new process born in the cgroup (clone3 with
 *     CLONE_INTO_CGROUP, no migration) and treadle's own child (CLONE_PARENT), the
 *     leader of a session of its own; this helper then exits 0;
 *   - "outside": the kernel would put the command in no cgroup (too old for
 *     CLONE_INTO_CGROUP, and moving this process in was refused too); it runs here;
 *   - nothing: the command is this very process (moved into the cgroup, or none asked).
 *
 * The ruleset is applied (with no_new_privs) before anything else, so whatever the
 * command starts inherits it, for good; the command never runs unconfined. It is C
 * rather than Python because it runs for every command: an exec of this program costs
 * a fraction of a millisecond, a second interpreter twenty. Built by `make`
 * (`make spawner`, part of the install); without it treadle uses
 * confine_exec.py and a gate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif
#ifndef PR_SET_SECCOMP
#define PR_SET_SECCOMP 22
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#if defined(__x86_64__)
#define SPAWN_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SPAWN_ARCH AUDIT_ARCH_AARCH64
#endif
#define SPAWN_CLONE_PARENT 0x00008000ULL
#define SPAWN_CLONE_INTO_CGROUP 0x200000000ULL

struct spawn_clone_args { /* struct clone_args, version 2 (Linux 5.7): 88 bytes */
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    uint64_t set_tid, set_tid_size, cgroup;
};

static void say(int fd, const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t done = write(fd, text, left);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return;
        text += done;
        left -= (size_t)done;
    }
}

static void fail(int status, const char *what, int code, int exit_code) {
    char line[512];
    snprintf(line, sizeof line, "treadle sandbox: %s: %s\n", what, strerror(code));
    say(2, line);
    if (status >= 0) say(status, line);
    _exit(exit_code);
}

#ifdef SPAWN_ARCH
/* seccomp_data: nr, arch, then the arguments' low words (little end) at 16, 24, 32. */
#define ARG(n) (offsetof(struct seccomp_data, args) + 8 * (n))
static struct sock_filter socket_filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), /* 0 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SPAWN_ARCH, 0, 23),  /* 1 another: refused */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 21, 0),  /* 3 x32: refused */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 20, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 14, 0),   /* 5 its flags at 20 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, 13, 0), /* 6 its flags at 20 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 14, 0),  /* 7 its flags at 22 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 15), /* 8 not socket: allowed */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(0)),               /* 9 its family */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1 /* AF_UNIX */, 13, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 16 /* AF_NETLINK */, 12, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2 /* AF_INET */, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 10 /* AF_INET6 */, 0, 11),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(1)),               /* 14 its type */
    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1 /* SOCK_STREAM */, 0, 8),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(2)),               /* 17 its protocol */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 5, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6 /* IPPROTO_TCP */, 4, 5),
    /* TCP Fast Open connects inside a send, where Landlock's connect rule never looks. */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(3)),               /* 20 sendto's, sendmmsg's flags */
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x20000000 /* MSG_FASTOPEN */, 3, 2),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(2)),               /* 22 sendmsg's flags */
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x20000000 /* MSG_FASTOPEN */, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),             /* 24 */
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),    /* 25 */
};
#endif

static void filter_sockets(int status) {
#ifdef SPAWN_ARCH
    struct sock_fprog program = {
        .len = (unsigned short)(sizeof socket_filter / sizeof socket_filter[0]),
        .filter = socket_filter,
    };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0L, 0L) != 0)
        fail(status, "prctl(PR_SET_SECCOMP)", errno, 126);
#else
    fail(status, "no socket filter is known for this machine", EOPNOTSUPP, 126);
#endif
}

static void write_file(int status, const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(status, path, errno, 126);
    ssize_t done = write(fd, text, strlen(text));
    int code = errno;
    close(fd);
    if (done != (ssize_t)strlen(text)) fail(status, path, done < 0 ? code : EIO, 126);
}

/* A user and network namespace of the command's own, where the only interface is a
 * loopback of its own (brought up here); the user namespace keeps it from joining
 * treadle's (setns needs a capability it has only in its own). Before Landlock, which
 * would refuse the writes to /proc/self. 0 when the kernel refuses the namespaces and
 * they are not `required` (the allowlist then keeps to Landlock's port rule). Under off
 * the loopback stays down (`up` 0): the namespace is there for what Landlock's TCP rules
 * miss, a listen() that binds a port itself, which then answers nobody. */
static int own_network(int status, int required, int up) {
    char map[64];
    unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
        if (!required) return 0;
        fail(status, "unshare(CLONE_NEWUSER | CLONE_NEWNET)", errno, 126);
    }
    write_file(status, "/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1\n", uid, uid);
    write_file(status, "/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%u %u 1\n", gid, gid);
    write_file(status, "/proc/self/gid_map", map);
    if (!up) return 1;
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq lo;
    memset(&lo, 0, sizeof lo);
    strcpy(lo.ifr_name, "lo");
    if (sock < 0 || ioctl(sock, SIOCGIFFLAGS, &lo) != 0) fail(status, "the loopback", errno, 126);
    lo.ifr_flags |= IFF_UP;
    if (ioctl(sock, SIOCSIFFLAGS, &lo) != 0) fail(status, "bringing the loopback up", errno, 126);
    close(sock);
    return 1;
}

/* allowlist, in a network of its own: the proxy's port on the command's own loopback,
 * listened on here and handed to treadle over CHANNEL (SCM_RIGHTS), whose proxy then
 * accepts its connections. Nothing else is reachable: not even another host on the
 * proxy's port, which Landlock's port rule alone would let through. */
static void proxy_inside(int status, int channel, int port, int required) {
    if (channel < 0) {
        if (required) fail(status, "allowlist+loopback without a channel", EINVAL, 126);
        return;
    }
    if (own_network(status, required, 1)) {
        int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in at;
        memset(&at, 0, sizeof at);
        at.sin_family = AF_INET;
        at.sin_port = htons((uint16_t)port);
        at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (listener < 0 || bind(listener, (struct sockaddr *)&at, sizeof at) != 0 ||
            listen(listener, 128) != 0)
            fail(status, "the proxy's port in the command's network", errno, 126);
        char byte = 'L', room[CMSG_SPACE(sizeof(int))];
        struct iovec part = {.iov_base = &byte, .iov_len = 1};
        struct msghdr message;
        memset(&message, 0, sizeof message);
        memset(room, 0, sizeof room);
        message.msg_iov = &part;
        message.msg_iovlen = 1;
        message.msg_control = room;
        message.msg_controllen = sizeof room;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &listener, sizeof(int));
        if (sendmsg(channel, &message, 0) != 1)
            fail(status, "handing the proxy's port to treadle", errno, 126);
        close(listener);
    }
    close(channel);
}

static int number(const char *text, int *out) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *text == '\0' || *end != '\0' || value < -1 || value > 1 << 30) return 0;
    *out = (int)value;
    return 1;
}

static void become(char **command) {
    execvp(command[0], command);
    int code = errno;
    char line[512];
    snprintf(line, sizeof line, "%s: %s\n", command[0], strerror(code));
    say(2, line);
    _exit(code == ENOENT ? 127 : 126);
}

int main(int argc, char **argv) {
    int status, ruleset, cgroup, filtered, channel, port;
    if (argc < 10 || strcmp(argv[1], "2") != 0 || strcmp(argv[8], "--") != 0 ||
        !number(argv[2], &status) || !number(argv[3], &ruleset) || !number(argv[4], &cgroup) ||
        !(strcmp(argv[5], "on") == 0 || strcmp(argv[5], "off") == 0 ||
          strcmp(argv[5], "allowlist") == 0 || strcmp(argv[5], "loopback") == 0 ||
          strcmp(argv[5], "allowlist+loopback") == 0) ||
        !number(argv[6], &channel) || !number(argv[7], &port) || port < 0 || port > 65535) {
        say(2, "usage: treadle-spawn 2 STATUS_FD RULESET_FD CGROUP_FD NETWORK CHANNEL_FD PORT "
               "-- PROGRAM [ARGUMENT ...]\n");
        return 2;
    }
    filtered = strcmp(argv[5], "on") != 0;
    char **command = argv + 9;
    if (filtered && ruleset < 0) fail(status, "a network mode without a ruleset", EINVAL, 126);
    if (strcmp(argv[5], "off") == 0) own_network(status, 0, 0);
    if (strcmp(argv[5], "loopback") == 0) own_network(status, 1, 1);
    if (strcmp(argv[5], "allowlist") == 0) proxy_inside(status, channel, port, 0);
    if (strcmp(argv[5], "allowlist+loopback") == 0) proxy_inside(status, channel, port, 1);
    if (ruleset >= 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0)
            fail(status, "prctl(PR_SET_NO_NEW_PRIVS)", errno, 126);
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
            fail(status, "landlock_restrict_self", errno, 126);
        close(ruleset);
        if (filtered) filter_sockets(status);
    }
    /* Confined (or nothing asked): the exec closes the status pipe, saying so. */
    if (status >= 0) fcntl(status, F_SETFD, FD_CLOEXEC);
    if (cgroup < 0) become(command);

    struct spawn_clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = SPAWN_CLONE_INTO_CGROUP | SPAWN_CLONE_PARENT;
    args.cgroup = (uint64_t)cgroup;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) { /* the command: a session of its own, in the cgroup from birth */
        close(cgroup);
        setsid();
        become(command);
    }
    if (pid > 0) {
        char line[64];
        snprintf(line, sizeof line, "spawned %ld\n", pid);
        say(status, line);
        _exit(0);
    }
    /* No clone3 into a cgroup here: move this process in, then become the command. */
    int procs = openat(cgroup, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    int moved = procs >= 0 && write(procs, "0", 1) == 1;
    if (procs >= 0) close(procs);
    close(cgroup);
    if (!moved) say(status, "outside\n");
    become(command);
    return 127;
}
