/* osmeter-guest: the program osmeter's full-system guest runs around the traced command.
 *
 *   osmeter-guest run CMD [ARG...]   start marker, run CMD, end marker, report its exit status;
 *                                    CMD's output goes to /tmp/osmeter-output (a serial console
 *                                    under emulation is slow enough to swamp the trace)
 *   osmeter-guest spawn N            fork and exec `osmeter-guest true` N times (process creation)
 *   osmeter-guest pingpong N SIZE    N round trips of SIZE bytes over a loopback TCP connection
 *   osmeter-guest true               exit 0
 *
 * The markers are 7-byte no-ops that osmeter's QEMU plugin recognises; see qemu-plugin/. Lines
 * starting "osmeter-guest:" on the console are read by osmeter. Built static so the guest needs no
 * shared libraries for it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MARK(code) __asm__ volatile(".byte 0x0f, 0x1f, 0x80, 0x4f, 0x53, 0x4d, " #code ::: "memory")

static int wait_for(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

static int run(char **argv)
{
    /* The command is checked before the window opens, so a missing program costs no trace. */
    if (access(argv[0], X_OK) != 0) {
        printf("osmeter-guest: cannot run %s: %s\n", argv[0], strerror(errno));
        return 127;
    }
    int out = open("/tmp/osmeter-output", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    /* The child sends exec's errno back through a close-on-exec pipe: silence means it ran. */
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        return 127;
    fflush(stdout);
    MARK(0x01);
    pid_t pid = fork();
    if (pid == 0) {
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        execv(argv[0], argv);
        int err = errno;
        ssize_t ignored = write(report[1], &err, sizeof err);
        (void)ignored;
        _exit(127);
    }
    close(report[1]);
    int status = pid < 0 ? -1 : wait_for(pid);
    MARK(0x02);
    int exec_errno = 0;
    if (status < 0 || read(report[0], &exec_errno, sizeof exec_errno) == (ssize_t)sizeof exec_errno) {
        printf("osmeter-guest: cannot run %s: %s\n", argv[0],
               strerror(status < 0 ? errno : exec_errno));
        return 127;
    }
    if (WIFSIGNALED(status)) {
        printf("osmeter-guest: killed by signal %d\n", WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    printf("osmeter-guest: exit %d\n", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

static int spawn(const char *self, long n)
{
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(self, self, "true", (char *)NULL);
            _exit(127);
        }
        if (pid < 0 || wait_for(pid) != 0)
            return 1;
    }
    return 0;
}

static int full_io(int fd, char *buf, size_t len, int writing)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

static int pingpong(long n, long size)
{
    int lsock = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    if (lsock < 0 || bind(lsock, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lsock, 1) < 0 ||
        getsockname(lsock, (struct sockaddr *)&addr, &alen) < 0)
        return 1;
    char *buf = calloc(1, (size_t)size);
    if (!buf)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        int c = accept(lsock, NULL, NULL);
        for (long i = 0; c >= 0 && i < n; i++)
            if (full_io(c, buf, (size_t)size, 0) || full_io(c, buf, (size_t)size, 1))
                _exit(1);
        _exit(c < 0);
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) < 0)
        return 1;
    for (long i = 0; i < n; i++) {
        buf[0] = (char)i;
        if (full_io(s, buf, (size_t)size, 1) || full_io(s, buf, (size_t)size, 0))
            return 1;
    }
    close(s);
    return wait_for(pid) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "run") == 0)
        return run(argv + 2);
    if (argc == 3 && strcmp(argv[1], "spawn") == 0)
        return spawn(argv[0], atol(argv[2]));
    if (argc == 4 && strcmp(argv[1], "pingpong") == 0)
        return pingpong(atol(argv[2]), atol(argv[3]));
    if (argc == 2 && strcmp(argv[1], "true") == 0)
        return 0;
    fprintf(stderr, "usage: osmeter-guest run CMD [ARG...] | spawn N | pingpong N SIZE | true\n");
    return 2;
}
