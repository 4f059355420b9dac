#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "CReelSocket.h"

_Static_assert(sizeof(struct ucred) == sizeof(reel_ucred), "reel_ucred must match struct ucred");
_Static_assert(offsetof(struct ucred, uid) == offsetof(reel_ucred, uid), "reel_ucred.uid must match struct ucred");
_Static_assert(offsetof(struct ucred, gid) == offsetof(reel_ucred, gid), "reel_ucred.gid must match struct ucred");

static int reel_address(const char *path, struct sockaddr_un *address) {
    memset(address, 0, sizeof(*address));
    address->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(address->sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(address->sun_path, path);
    return 0;
}

int reel_listen_unix(const char *path, int backlog) {
    struct sockaddr_un address;
    if (reel_address(path, &address) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int reel_send_descriptor(const char *path, int fd) {
    struct sockaddr_un address;
    if (reel_address(path, &address) != 0) return -1;
    int connection = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connection < 0) return -1;
    if (connect(connection, (struct sockaddr *)&address, sizeof(address)) != 0) {
        int saved = errno;
        close(connection);
        errno = saved;
        return -1;
    }
    char byte = 'R';
    struct iovec data = {.iov_base = &byte, .iov_len = 1};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer)};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    ssize_t sent;
    do {
        sent = sendmsg(connection, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    int saved = errno;
    close(connection);
    if (sent != 1) {
        errno = sent < 0 ? saved : EIO;
        return -1;
    }
    return 0;
}

int reel_receive_descriptor(int listener, int timeout_ms) {
    struct pollfd waiting = {.fd = listener, .events = POLLIN};
    int ready;
    do {
        ready = poll(&waiting, 1, timeout_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    int connection = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (connection < 0) return -1;
    char byte;
    struct iovec data = {.iov_base = &byte, .iov_len = 1};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof(control.buffer)};
    ssize_t received;
    do {
        received = recvmsg(connection, &message, MSG_CMSG_CLOEXEC);
    } while (received < 0 && errno == EINTR);
    int saved = errno;
    close(connection);
    if (received < 0) {
        errno = saved;
        return -1;
    }
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (received != 1 || header == NULL || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS
        || header->cmsg_len != CMSG_LEN(sizeof(int))) {
        errno = EBADMSG;
        return -1;
    }
    int fd;
    memcpy(&fd, CMSG_DATA(header), sizeof(int));
    return fd;
}
