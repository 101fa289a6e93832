/** A binary heap of (node, distance): the smallest distance on top, or the largest when `max`. */
export class Heap {
  private nodes: number[] = [];
  private distances: number[] = [];

  constructor(private readonly max: boolean) {}

  get size(): number {
    return this.nodes.length;
  }

  topDistance(): number {
    return this.distances[0]!;
  }

  push(node: number, distance: number): void {
    const { nodes, distances } = this;
    let at = nodes.length;
    nodes.push(node);
    distances.push(distance);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.before(distance, distances[parent]!)) break;
      nodes[at] = nodes[parent]!;
      distances[at] = distances[parent]!;
      at = parent;
    }
    nodes[at] = node;
    distances[at] = distance;
  }

  pop(): number {
    const { nodes, distances } = this;
    const top = nodes[0]!;
    const lastNode = nodes.pop()!;
    const lastDistance = distances.pop()!;
    const n = nodes.length;
    if (n === 0) return top;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && this.before(distances[child + 1]!, distances[child]!)) child++;
      if (!this.before(distances[child]!, lastDistance)) break;
      nodes[at] = nodes[child]!;
      distances[at] = distances[child]!;
      at = child;
    }
    nodes[at] = lastNode;
    distances[at] = lastDistance;
    return top;
  }

  private before(a: number, b: number): boolean {
    return this.max ? a > b : a < b;
  }
}
