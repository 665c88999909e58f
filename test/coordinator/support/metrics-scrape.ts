/**
 * Sums the samples of one Prometheus metric in a coordinator's `/metrics` text, optionally only
 * those whose labels include every `label="value"` pair given.
 */
export async function scrapeMetric(
  baseUrl: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): Promise<number> {
  const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  if (res.status !== 200) throw new Error(`${baseUrl}/metrics → ${res.status}`);
  const text = await res.text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const matches = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (!matches) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
