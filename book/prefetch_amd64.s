#include "textflag.h"

// func prefetch(lines unsafe.Pointer, n int, pair, w unsafe.Pointer)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ w+24(FP), AX
	// PREFETCHW (AX), which the assembler does not know. CPUs without it
	// (Intel before Broadwell) run it as a NOP.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	MOVQ pair+16(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	MOVQ lines+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ loop
done:
	RET
