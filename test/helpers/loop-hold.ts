/**
 * The longest the event loop was held while `work` ran: the largest gap between ticks of a 1 ms interval, in CPU
 * time of this thread (process.threadCpuUsage), so a machine busy with other processes does not count as holding
 * the loop; the gap in wall-clock time is given too, for the message.
 */
export async function loopHold<T>(
  work: () => Promise<T>,
): Promise<{ result: T; cpuMs: number; wallMs: number; ticks: number }> {
  const threadCpu = () => {
    const { user, system } = process.threadCpuUsage();
    return (user + system) / 1000;
  };
  let lastWall = performance.now();
  let lastCpu = threadCpu();
  let cpuMs = 0;
  let wallMs = 0;
  let ticks = 0;
  const tick = () => {
    const wall = performance.now();
    const cpu = threadCpu();
    cpuMs = Math.max(cpuMs, cpu - lastCpu);
    wallMs = Math.max(wallMs, wall - lastWall);
    lastWall = wall;
    lastCpu = cpu;
    ticks++;
  };
  const timer = setInterval(tick, 1);
  try {
    const result = await work();
    tick();
    return { result, cpuMs, wallMs, ticks };
  } finally {
    clearInterval(timer);
  }
}
