module courier/interop-server

go 1.24
