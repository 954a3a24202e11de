/* Issues 10 RM_CONTROL-shaped ioctls (request 0xc020462a, a filled NVOS54)
 * on a pipe. The kprobe test attaches tracer's frontend kprobe to
 * pipe_ioctl, which has nvidia_unlocked_ioctl's signature
 * (struct file *, unsigned int cmd, unsigned long arg); the pipe rejects the
 * request (-ENOTTY), which the kretprobe must report. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void) {
    int p[2];
    if (pipe(p) != 0) {
        perror("ioctl_client: pipe");
        return 1;
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
        ioctl(p[0], 0xc020462aUL, nvos54);
    }
    return 0;
}
