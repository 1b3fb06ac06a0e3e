module cgo_segv

go 1.19
