/* sigdfl CMD ARGS...: runs CMD with SIGINT at its default action. A shell
 * starts its background jobs with SIGINT ignored, and the tracer's command
 * inherits that (as after exec), so a forwarded SIGINT would not end it. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: sigdfl CMD [ARGS...]\n");
        return 2;
    }
    signal(SIGINT, SIG_DFL);
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
