/* Issues 10 RM_CONTROL-shaped ioctls (request 0xc020462a, a filled NVOS54).
 *
 * Without an argument, on a pipe: the kprobe test attaches tracer's frontend
 * kprobe to pipe_ioctl, which has nvidia_unlocked_ioctl's signature
 * (struct file *, unsigned int cmd, unsigned long arg); the pipe rejects the
 * request (-ENOIOCTLCMD, ENOTTY for the caller), which the kretprobe must report.
 *
 * With a PATH (the paths test: /dev/nvidiactl made a /dev/urandom node), on
 * that file opened O_RDWR, then closed: the ioctl syscall tracepoints see it
 * as an NVIDIA file, and the kprobe on random_ioctl sees the same calls. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int fd, p[2];
    if (argc > 1) {
        fd = open(argv[1], O_RDWR);
        if (fd < 0) {
            perror(argv[1]);
            return 1;
        }
    } else {
        if (pipe(p) != 0) {
            perror("ioctl_client: pipe");
            return 1;
        }
        fd = p[0];
    }
    for (uint32_t i = 0; i < 10; i++) {
        uint32_t nvos54[8];
        memset(nvos54, 0, sizeof nvos54);
        nvos54[0] = 0xc1d00001;      /* hClient */
        nvos54[1] = 0x5c000001 + i;  /* hObject */
        nvos54[2] = 0x20800102;      /* cmd: NV2080_CTRL_CMD_GPU_GET_INFO_V2 */
        nvos54[3] = 0;               /* flags */
        nvos54[6] = 16;              /* paramsSize */
        nvos54[7] = 0x1f;            /* status */
        ioctl(fd, 0xc020462aUL, nvos54);
    }
    if (argc > 1 && close(fd) != 0) {
        perror("ioctl_client: close");
        return 1;
    }
    return 0;
}
