/* SPDX-License-Identifier: GPL-2.0 */
/* The suite's ioctl argument convention: argsz first, one extension scheme. */
#ifndef _LINUX_P2P_IOCTL_H
#define _LINUX_P2P_IOCTL_H

#include <linux/types.h>
#include <linux/uaccess.h>

/**
 * p2p_ioctl_copy_in - copy an ioctl argument that starts with u32 argsz
 * @karg: kernel copy, @ksize bytes
 * @ksize: size of the structure this kernel knows
 * @uarg: user pointer
 *
 * A larger argsz (a newer userspace) is accepted if the bytes this kernel
 * does not know are zero, as copy_struct_from_user() checks; the caller
 * writes back at most @ksize bytes.
 *
 * Return: 0, -EFAULT, -EINVAL when argsz is smaller than @ksize, -E2BIG
 * when the unknown tail is not zero.
 */
static inline int p2p_ioctl_copy_in(void *karg, size_t ksize, unsigned long uarg)
{
	u32 argsz;

	if (get_user(argsz, (u32 __user *)uarg))
		return -EFAULT;
	if (argsz < ksize)
		return -EINVAL;
	return copy_struct_from_user(karg, ksize, (void __user *)uarg, argsz);
}

#endif /* _LINUX_P2P_IOCTL_H */
