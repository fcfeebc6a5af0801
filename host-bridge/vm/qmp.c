/*
 * A small synchronous QMP client: QEMU's control protocol is one JSON
 * object a line over a unix socket; jansson parses each line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/qmp.h"

struct qmp {
	int fd;
	char *buf; /* bytes read, not yet a whole line */
	size_t len, cap;
};

/* One message, waiting at most the socket's receive timeout. */
static int
qmp_read(struct qmp *q, json_t **out, char **cause)
{
	for (;;) {
		char *nl = q->len ? memchr(q->buf, '\n', q->len) : NULL;
		if (nl != NULL) {
			json_error_t err;
			size_t n = (size_t)(nl - q->buf) + 1;
			json_t *msg = json_loadb(q->buf, n - 1, 0, &err);
			memmove(q->buf, q->buf + n, q->len - n);
			q->len -= n;
			if (msg == NULL || !json_is_object(msg)) {
				json_decref(msg);
				*cause = hb_fmt("qmp: unreadable message: %s",
				    err.text);
				return -1;
			}
			*out = msg;
			return 0;
		}
		if (q->cap - q->len < 4096) {
			size_t cap = q->cap ? q->cap * 2 : 8192;
			char *b = realloc(q->buf, cap);
			if (b == NULL) {
				*cause = hb_fmt("qmp: out of memory");
				return -1;
			}
			q->buf = b;
			q->cap = cap;
		}
		ssize_t r = read(q->fd, q->buf + q->len, q->cap - q->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*cause = hb_fmt("qmp: %s",
			    errno == EAGAIN ? "no answer in time" :
			                      strerror(errno));
			return -1;
		}
		if (r == 0) {
			*cause = hb_fmt("qmp: qemu closed the connection");
			return -1;
		}
		q->len += (size_t)r;
	}
}

/* s (n bytes) and the line's end. */
static int
qmp_send(struct qmp *q, const char *s, size_t n, char **cause)
{
	size_t off = 0;

	while (off < n) {
		/* QEMU may be gone (a state it could not load): an error,
		 * never a SIGPIPE that kills the command. */
		ssize_t w = send(q->fd, s + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			*cause = hb_fmt("qmp: %s", strerror(errno));
			return -1;
		}
		off += (size_t)w;
	}
	if (send(q->fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		*cause = hb_fmt("qmp: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int
qmp_write(struct qmp *q, json_t *msg, char **cause)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	int rv;

	if (s == NULL) {
		*cause = hb_fmt("qmp: out of memory");
		return -1;
	}
	rv = qmp_send(q, s, strlen(s), cause);
	free(s);
	return rv;
}

/* The answer to cmd, events skipped: its "return" into *ret (if not
 * NULL), or its error into *cause. */
static int
qmp_reply(struct qmp *q, const char *cmd, json_t **ret, char **cause)
{
	for (;;) {
		json_t *msg;
		if (qmp_read(q, &msg, cause) != 0)
			return -1;
		json_t *r = json_object_get(msg, "return");
		json_t *e = json_object_get(msg, "error");
		if (r != NULL) {
			if (ret != NULL)
				*ret = json_incref(r);
			json_decref(msg);
			return 0;
		}
		if (e != NULL) {
			const char *desc = json_string_value(
			    json_object_get(e, "desc"));
			*cause = hb_fmt("qmp '%s': %s", cmd,
			    desc ? desc : "error");
			json_decref(msg);
			return -1;
		}
		json_decref(msg); /* an event */
	}
}

int
qmp_exec(struct qmp *q, const char *cmd, json_t *args, json_t **ret,
    char **cause)
{
	json_t *req = json_pack("{s:s}", "execute", cmd);
	if (req == NULL) {
		json_decref(args);
		*cause = hb_fmt("qmp: out of memory");
		return -1;
	}
	if (args != NULL)
		json_object_set_new(req, "arguments", args);
	int rv = qmp_write(q, req, cause);
	json_decref(req);
	if (rv != 0)
		return -1;
	return qmp_reply(q, cmd, ret, cause);
}

int
qmp_open(struct qmp **out, const char *path, int timeout_ms, char **cause)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct qmp *q = NULL;
	json_t *greeting = NULL;

	if (strlen(path) >= sizeof sa.sun_path) {
		*cause = hb_fmt("qmp socket path '%s' too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if ((q = calloc(1, sizeof *q)) == NULL) {
		*cause = hb_fmt("qmp: out of memory");
		return -1;
	}
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (q->fd < 0) {
		*cause = hb_fmt("qmp: socket: %s", strerror(errno));
		goto fail;
	}
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	setsockopt(q->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(q->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		*cause = hb_fmt("qmp: connect '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (qmp_read(q, &greeting, cause) != 0)
		goto fail;
	if (json_object_get(greeting, "QMP") == NULL) {
		*cause = hb_fmt("qmp: no greeting on '%s'", path);
		goto fail;
	}
	json_decref(greeting);
	greeting = NULL;
	if (qmp_exec(q, "qmp_capabilities", NULL, NULL, cause) != 0)
		goto fail;
	*out = q;
	return 0;
fail:
	json_decref(greeting);
	qmp_close(q);
	return -1;
}

/* Run cmd with args (stolen), the descriptor fd passed with it
 * (SCM_RIGHTS): *ret as qmp_exec's. */
static int
qmp_exec_fd(struct qmp *q, const char *cmd, json_t *args, int fd, json_t **ret,
    char **cause)
{
	json_t *req = json_pack("{s:s, s:o}", "execute", cmd, "arguments",
	    args);
	char *s = req ? json_dumps(req, JSON_COMPACT) : NULL;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov;
	struct msghdr mh = { 0 };
	ssize_t w;
	int rv = -1;

	json_decref(req);
	if (s == NULL) {
		*cause = hb_fmt("qmp: out of memory");
		return -1;
	}
	/* the descriptor rides on the command's first byte; QEMU keeps it
	 * for the command it reads that byte in */
	memset(&u, 0, sizeof u);
	iov.iov_base = s;
	iov.iov_len = 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.b;
	mh.msg_controllen = sizeof u.b;
	CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &fd, sizeof fd);
	while ((w = sendmsg(q->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (w != 1) {
		*cause = hb_fmt("qmp: %s",
		    w < 0 ? strerror(errno) : "short send");
		goto out;
	}
	if (qmp_send(q, s + 1, strlen(s + 1), cause) == 0)
		rv = qmp_reply(q, cmd, ret, cause);
out:
	free(s);
	return rv;
}

int
qmp_getfd(struct qmp *q, const char *name, int fd, char **cause)
{
	return (qmp_exec_fd(q, "getfd", json_pack("{s:s}", "fdname", name), fd,
	    NULL, cause));
}

void
qmp_close(struct qmp *q)
{
	if (q == NULL)
		return;
	if (q->fd >= 0)
		close(q->fd);
	free(q->buf);
	free(q);
}
