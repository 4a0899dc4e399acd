#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write a disk image whose every 512-byte sector is unique and recognisable:
a header "<seed> LBA <lba>" then bytes derived from sha256(seed, lba).

  mkimage.py FILE SIZE SEED
"""
import hashlib
import sys


def sector(seed, lba):
    head = f'{seed} LBA {lba:010d}\n'.encode()
    body = hashlib.sha256(f'{seed}:{lba}'.encode()).digest() * 16
    return (head + body)[:512]


def main():
    path, size, seed = sys.argv[1], int(sys.argv[2], 0), sys.argv[3]
    with open(path + '.tmp', 'wb') as f:
        for chunk in range(0, size // 512, 2048):
            f.write(b''.join(sector(seed, lba) for lba in range(chunk, min(chunk + 2048, size // 512))))
    import os
    os.replace(path + '.tmp', path)


if __name__ == '__main__':
    main()
