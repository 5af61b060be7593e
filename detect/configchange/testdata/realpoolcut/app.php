<?php
// A page of known cost: CPU_MS of CPU (measured with getrusage, so it is CPU
// time whatever else the machine runs), MEM_MB of memory held while it
// runs, then WAIT_MS of waiting (a database or an API, no CPU).
$cpuMs = (int) (getenv('APP_CPU_MS') ?: 5);
$memMb = (int) (getenv('APP_MEM_MB') ?: 8);
$waitMs = (int) (getenv('APP_WAIT_MS') ?: 250);
function cpu_us(): int {
    $r = getrusage();
    return $r['ru_utime.tv_sec'] * 1000000 + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_sec'] * 1000000 + $r['ru_stime.tv_usec'];
}
$held = str_repeat('m', $memMb << 20);
$held[mt_rand(0, strlen($held) - 1)] = 'x';
$start = cpu_us();
$x = 0;
while (cpu_us() - $start < $cpuMs * 1000) {
    for ($i = 0; $i < 2000; $i++) {
        $x = ($x * 31 + $i) % 1000003;
    }
}
usleep($waitMs * 1000);
header('Content-Type: text/html; charset=utf-8');
echo "<!doctype html><title>article</title><p>", htmlspecialchars($_SERVER['REQUEST_URI'] ?? '/'), " ", $x, " ", strlen($held), "</p>\n";
