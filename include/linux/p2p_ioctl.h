/* SPDX-License-Identifier: GPL-2.0 */
/* The suite's ioctl argument convention: argsz first, one extension scheme. */
#ifndef _LINUX_P2P_IOCTL_H
#define _LINUX_P2P_IOCTL_H

#include <linux/minmax.h>
#include <linux/stddef.h>
#include <linux/types.h>
#include <linux/uaccess.h>

/**
 * p2p_ioctl_copy_in - copy an ioctl argument that starts with u32 argsz
 * @karg: kernel copy, @ksize bytes
 * @ksize: size of the structure this kernel knows
 * @minsz: the smallest argsz accepted, offsetofend() of the last member of
 *	   the structure's first version (vfio's minsz): members added later
 *	   never raise it
 * @uarg: user pointer
 *
 * An older, shorter structure (@minsz <= argsz < @ksize) is accepted and
 * the members it does not have read as zero; a larger one (a newer
 * userspace) if the bytes this kernel does not know are zero. Both as
 * copy_struct_from_user() does. The copy keeps the caller's argsz, so that
 * p2p_ioctl_copy_out() writes back no more than the caller passed.
 *
 * Return: 0, -EFAULT, -EINVAL when argsz is below @minsz, -E2BIG when the
 * unknown tail is not zero.
 */
static inline int p2p_ioctl_copy_in(void *karg, size_t ksize, size_t minsz, unsigned long uarg)
{
	u32 argsz;
	int ret;

	if (get_user(argsz, (u32 __user *)uarg))
		return -EFAULT;
	if (argsz < minsz)
		return -EINVAL;
	ret = copy_struct_from_user(karg, ksize, (void __user *)uarg, argsz);
	/* the size checked, not one another thread wrote meanwhile */
	*(u32 *)karg = argsz;
	return ret;
}

/**
 * p2p_ioctl_copy_out - write back what p2p_ioctl_copy_in() read, and what
 *	the ioctl filled in
 * @uarg: user pointer
 * @karg: the kernel copy, starting with the caller's argsz
 * @ksize: size of the structure this kernel knows
 *
 * At most argsz bytes: an older caller's shorter structure is never
 * overrun, a newer caller's tail (zero, checked on the way in) is left as
 * it was.
 *
 * Return: 0 or -EFAULT.
 */
static inline int p2p_ioctl_copy_out(unsigned long uarg, const void *karg, size_t ksize)
{
	u32 argsz = *(const u32 *)karg;

	return copy_to_user((void __user *)uarg, karg, min_t(size_t, argsz, ksize)) ? -EFAULT : 0;
}

#endif /* _LINUX_P2P_IOCTL_H */
