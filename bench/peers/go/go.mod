module courier.bench/peers/goload

go 1.24
