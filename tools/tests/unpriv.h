/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Part of a test run as an unprivileged user: a child process with uid and
 * gid 65534 (nobody and nogroup in the bench guest, qemu/initramfs.sh), no
 * capabilities, and no supplementary group but those asked for. For the
 * tests of who may open and use /dev/p2pbarN and /dev/p2pnvmeN.
 *
 * The callback runs in the child and says what happened through its return
 * value, which becomes the child's exit status: 0 for success or an errno
 * value is the convention of the tests. It should not print (the KTAP lines
 * are the parent's).
 */
#ifndef P2P_TESTS_UNPRIV_H
#define P2P_TESTS_UNPRIV_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any #include: setresuid() and setresgid() need it"
#endif

#include <errno.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNPRIV_UID		65534
#define UNPRIV_GID		65534
/* the child could not become the unprivileged user: nothing was run */
#define UNPRIV_NOT_DROPPED	255

/*
 * unpriv_run_groups - run @fn(@arg) in a child as uid and gid 65534
 * @groups: the child's supplementary groups (e.g. the group a udev rule gave
 *	    a device node), or NULL
 * @ngroups: entries at @groups, 0 for none
 * @fn: what to run; its return value, 0 to 254 (others count as 254), is
 *	the child's exit status
 * @arg: passed to @fn
 *
 * The child sets its supplementary groups first (setgroups() needs
 * CAP_SETGID, which leaving uid 0 drops), then its real, effective and
 * saved gid, then uid, and checks that it cannot get uid or gid 0 back.
 * Pending stdio output is flushed before the fork; the child leaves with
 * _exit() (no stdio flush, no atexit handler). The child keeps the
 * caller's open files, as after any fork(): @fn must open what it tests
 * itself, not use an fd the caller opened as root.
 *
 * Return: @fn's value; UNPRIV_NOT_DROPPED if the child could not drop its
 * privileges; 256 + the signal that killed the child; -1 if fork() or
 * waitpid() failed.
 */
static __attribute__((unused)) int unpriv_run_groups(const gid_t *groups, size_t ngroups,
						     int (*fn)(void *), void *arg)
{
	pid_t pid;
	int st, ret;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgroups(ngroups, groups) ||
		    setresgid(UNPRIV_GID, UNPRIV_GID, UNPRIV_GID) ||
		    setresuid(UNPRIV_UID, UNPRIV_UID, UNPRIV_UID) ||
		    !setuid(0) || !setgid(0) || getuid() != UNPRIV_UID ||
		    geteuid() != UNPRIV_UID || getegid() != UNPRIV_GID ||
		    getgroups(0, NULL) != (int)ngroups)
			_exit(UNPRIV_NOT_DROPPED);
		ret = fn(arg);
		_exit(ret < 0 || ret > 254 ? 254 : ret);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(st))
		return 256 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* unpriv_run - unpriv_run_groups() without any supplementary group */
static __attribute__((unused)) int unpriv_run(int (*fn)(void *), void *arg)
{
	return unpriv_run_groups(NULL, 0, fn, arg);
}

/* What unpriv_run*() returned, for a test's line: an errno's text or what else. */
static __attribute__((unused)) const char *unpriv_str(int st)
{
	static char buf[64];

	if (st == UNPRIV_NOT_DROPPED)
		return "could not drop privileges";
	if (st < 0)
		return "fork or wait failed";
	if (st >= 256) {
		snprintf(buf, sizeof(buf), "killed by signal %d", st - 256);
		return buf;
	}
	return st ? strerror(st) : "success";
}

#endif /* P2P_TESTS_UNPRIV_H */
