module github.com/tpslice/tpslice

go 1.26

require github.com/x448/float16 v0.8.4
