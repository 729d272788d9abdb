// A module hook for the example's Node tests: `@herald-chat/client` is this repository's clients/js (the app installs
// it from there too), and the example's own .js files are ES modules (Metro reads them as such; Node would otherwise
// take a .js file under a package.json without "type" for CommonJS).
const client = new URL("../../../clients/js/src/index.js", import.meta.url).href;
const example = new URL("../", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if (specifier === "@herald-chat/client") return { url: client, format: "module", shortCircuit: true };
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith(example) && resolved.url.endsWith(".js")) return { ...resolved, format: "module" };
  return resolved;
}
