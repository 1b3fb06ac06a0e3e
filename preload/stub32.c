/* SPDX-License-Identifier: MIT */
/*
 * stub32.c - the 32-bit librcuwalk.so: empty on purpose.
 *
 * The launcher puts <prefix>/$LIB/librcuwalk.so into LD_PRELOAD when the
 * library is installed in the loader's $LIB directory.  A 32-bit program
 * started from a 64-bit build then loads this object from its own $LIB
 * (lib32/ or lib/i386-linux-gnu/) instead of printing an ld.so error about
 * the 64-bit one.  Nothing is interposed: 32-bit programs run uncached.
 */
void rcuwalk_stub32(void);
void rcuwalk_stub32(void)
{
}
