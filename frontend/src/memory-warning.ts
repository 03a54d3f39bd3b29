// The run page header's warning while a Ray node's memory is nearly full
// (system/node/{node}/mem_frac, sampled by the job each iteration: umbra.telemetry.system).

/**
 * The warning for the nodes whose latest memory fraction (by node) is at or above
 * `warnFrac`, fullest first: "Near the memory limit: node a 95%, node b 91% of its memory
 * in use"; "" when no node is.
 */
export function memoryWarning(latest: Map<string, number>, warnFrac: number): string {
  const near = [...latest].filter(([, frac]) => frac >= warnFrac).sort((a, b) => b[1] - a[1]);
  if (!near.length) return "";
  const nodes = near.map(([node, frac]) => `node ${node} ${(100 * frac).toFixed(0)}%`).join(", ");
  return `Near the memory limit: ${nodes} of ${near.length === 1 ? "its" : "their"} memory in use`;
}
