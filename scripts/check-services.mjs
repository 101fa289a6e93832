#!/usr/bin/env node
// CI guard: the distributed-mode tests need the real Redis and PostgreSQL of this machine. In CI their absence is
// a failure, not a reason to skip; on a laptop `npm test` skips those tests with a visible message instead.
import { connect } from 'node:net';

const services = [
  { name: 'Redis', url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  { name: 'PostgreSQL', url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
];

function reachable(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

let missing = 0;
for (const service of services) {
  const ok = await reachable(service.url);
  console.log(`${ok ? 'ok     ' : 'MISSING'} ${service.name} at ${new URL(service.url).host}`);
  if (!ok) missing++;
}
if (missing > 0) {
  console.error('CI needs Redis and PostgreSQL running (see README, "Tests").');
  process.exit(1);
}
