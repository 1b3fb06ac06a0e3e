// A cgo program: Go's runtime installs its SIGSEGV handler with the raw
// rt_sigaction syscall, over the shim's, and forwards faults from C code to
// the handler it found there.  Its own nil dereference must still become a
// recoverable panic, and a stat() with an unreadable path from C code must
// still be EFAULT (14) under the shim.
package main

/*
#include <sys/stat.h>
#include <sys/mman.h>
#include <errno.h>
#include <stdio.h>
static int badstat(void) {
	char *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct stat st;
	stat("/etc/passwd", &st); stat("/etc/passwd", &st);
	errno = 0;
	int r = stat(p, &st);
	return r == -1 ? errno : 0;
}
*/
import "C"
import "fmt"

func main() {
	defer func() { r := recover(); fmt.Println("recovered nil deref:", r != nil, "cgo stat bad ptr errno:", int(C.badstat())) }()
	var p *int
	fmt.Println(*p)
}
