/* Writes phase markers the way a traced program would (docs/markers.md):
 * one write(2) per line to the FIFO named by TRACER_MARKER_FIFO, opened
 * O_WRONLY|O_NONBLOCK. Prints every line it wrote to stdout so the test can
 * compare them with the trace. Exits 3 when the variable is not set. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;

static unsigned long long mono(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void put(const char *line) {
    size_t n = strlen(line);
    if (write(fd, line, n) != (ssize_t)n) {
        perror("write");
        exit(4);
    }
    printf("%s", line);
    fflush(stdout);
}

static void marker(const char *op, const char *label, const char *extra) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s %s%s ts=%llu pid=%d tid=%d\n", op, label, extra, mono(), getpid(), gettid());
    put(buf);
}

int main(void) {
    const char *path = getenv("TRACER_MARKER_FIFO");
    if (!path) {
        printf("no marker FIFO\n");
        return 3;
    }
    fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 5;
    }
    marker("phase", "import", "");
    usleep(2000);
    marker("phase", "model load", "");
    pid_t c = fork();
    if (c == 0) {
        /* A child inherits the open FIFO and writes with its own pid. */
        marker("iteration", "0", " tokens=20");
        _exit(0);
    }
    waitpid(c, NULL, 0);
    put("bogus line\n");
    put("mark no fields here\n");
    marker("phase", "end", "");
    return 0;
}
