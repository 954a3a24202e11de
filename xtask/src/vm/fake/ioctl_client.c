/* Opens /dev/null and issues 10 ioctls with request 0xc020462a (they fail with ENOTTY). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>

int main(void) {
    char buf[0x20] = {0};
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) {
        perror("ioctl_client: /dev/null");
        return 1;
    }
    for (int i = 0; i < 10; i++)
        ioctl(fd, 0xc020462aUL, buf);
    return 0;
}
