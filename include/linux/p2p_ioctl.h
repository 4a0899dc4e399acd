/* SPDX-License-Identifier: GPL-2.0 */
/* The suite's ioctl argument convention: argsz first, copy what we know. */
#ifndef _LINUX_P2P_IOCTL_H
#define _LINUX_P2P_IOCTL_H

#include <linux/types.h>
#include <linux/uaccess.h>

/**
 * p2p_ioctl_copy_in - copy an ioctl argument that starts with u32 argsz
 * @karg: kernel copy, @minsz bytes
 * @minsz: size of the structure this kernel knows
 * @uarg: user pointer
 *
 * A larger argsz (a newer userspace) is accepted; only @minsz bytes are read.
 *
 * Return: 0, -EFAULT, or -EINVAL when argsz is smaller than @minsz.
 */
static inline int p2p_ioctl_copy_in(void *karg, size_t minsz, unsigned long uarg)
{
	u32 argsz;

	if (get_user(argsz, (u32 __user *)uarg))
		return -EFAULT;
	if (argsz < minsz)
		return -EINVAL;
	return copy_from_user(karg, (void __user *)uarg, minsz) ? -EFAULT : 0;
}

#endif /* _LINUX_P2P_IOCTL_H */
