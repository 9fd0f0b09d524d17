#include "textflag.h"

// func prefetch(lines unsafe.Pointer, n int, pair, w unsafe.Pointer)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-32
	MOVD w+24(FP), R0
	PRFM (R0), PSTL1KEEP
	MOVD pair+16(FP), R0
	PRFM (R0), PLDL1KEEP
	ADD $64, R0
	PRFM (R0), PLDL1KEEP
	MOVD lines+0(FP), R0
	MOVD n+8(FP), R1
	CMP $0, R1
	BLE done
loop:
	PRFM (R0), PLDL1KEEP
	ADD $64, R0
	SUBS $1, R1
	BNE loop
done:
	RET
