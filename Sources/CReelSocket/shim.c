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

int reel_send_descriptor(const char *path, int fd, uint64_t note) {
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
    unsigned char bytes[9] = {'R'};
    for (int i = 0; i < 8; i++) bytes[1 + i] = (unsigned char)(note >> (8 * i));
    struct iovec data = {.iov_base = bytes, .iov_len = sizeof(bytes)};
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
    if (sent != (ssize_t)sizeof(bytes)) {
        errno = sent < 0 ? saved : EIO;
        return -1;
    }
    return 0;
}

int reel_receive_descriptor(int listener, int timeout_ms, uint64_t *note, int *has_note) {
    *note = 0;
    *has_note = 0;
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
    unsigned char bytes[9];
    struct iovec data = {.iov_base = bytes, .iov_len = sizeof(bytes)};
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
    struct cmsghdr *header = received < 0 ? NULL : CMSG_FIRSTHDR(&message);
    if (received < 1 || bytes[0] != 'R' || header == NULL || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS
        || header->cmsg_len != CMSG_LEN(sizeof(int))) {
        close(connection);
        errno = received < 0 ? saved : EBADMSG;
        return -1;
    }
    int fd;
    memcpy(&fd, CMSG_DATA(header), sizeof(int));
    // A stream may part the note from its first byte: read on until the sender closes.
    size_t total = (size_t)received;
    while (total < sizeof(bytes)) {
        ssize_t more = read(connection, bytes + total, sizeof(bytes) - total);
        if (more < 0 && errno == EINTR) continue;
        if (more <= 0) break;
        total += (size_t)more;
    }
    close(connection);
    if (total == sizeof(bytes)) {
        for (int i = 0; i < 8; i++) *note |= (uint64_t)bytes[1 + i] << (8 * i);
        *has_note = 1;
    }
    return fd;
}
