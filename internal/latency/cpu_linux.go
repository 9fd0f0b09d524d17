package latency

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the calling OS thread's CPU time in ns (0 on failure).
func threadCPU() int64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}

// pinThread binds the calling OS thread (locked to its goroutine) to the
// k-th (0-based) CPU it may run on and returns a function restoring the set
// it had, or false when there is no such CPU or the system refused.
func pinThread(k int) (restore func(), ok bool) {
	var old [16]uint64 // up to 1024 CPUs
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(old), uintptr(unsafe.Pointer(&old))); e != 0 {
		return func() {}, false
	}
	cpu := -1
	for i, n := 0, 0; i < 64*len(old); i++ {
		if old[i/64]&(1<<(i%64)) != 0 {
			if n == k {
				cpu = i
				break
			}
			n++
		}
	}
	if cpu < 0 {
		return func() {}, false
	}
	var one [16]uint64
	one[cpu/64] = 1 << (cpu % 64)
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(one), uintptr(unsafe.Pointer(&one))); e != 0 {
		return func() {}, false
	}
	return func() {
		syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(old), uintptr(unsafe.Pointer(&old)))
	}, true
}
