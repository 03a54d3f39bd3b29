import { fileURLToPath } from "node:url";
import { defineConfig, type EnvironmentOptions } from "vite";

// Builds each page's entry into fixed-name files that Django serves as static
// assets (ES module scripts: include them with <script type="module">):
//   src/ui.css       -> platform/static/build/ui.css (the site-wide look; base.html links it on every page)
//   src/dashboard.ts -> platform/static/build/dashboard.js + dashboard.css (run dashboard)
//   src/compare.ts   -> platform/static/build/compare.js + compare.css (run comparison)
//   src/whatif.ts    -> platform/static/build/whatif.js + whatif.css (what-if simulations)
//   src/runs.ts      -> platform/static/build/runs.js + runs.css (the team's runs table)
// Each entry is built on its own, so every page's JS and CSS are self-contained
// (no shared chunk to load, and uPlot's CSS lands in both CSS files).
const OUT_DIR = "../platform/static/build";

function page(name: string, emptyOutDir: boolean, input = `src/${name}.ts`): EnvironmentOptions {
  return {
    consumer: "client",
    build: {
      outDir: OUT_DIR,
      emptyOutDir,
      sourcemap: false,
      rolldownOptions: {
        input,
        output: {
          entryFileNames: `${name}.js`,
          chunkFileNames: `${name}-[name].js`,
          assetFileNames: `${name}[extname]`,
        },
      },
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  publicDir: false,
  // "client" is vite's default environment: the dashboard, built first (it empties the folder).
  environments: {
    client: page("dashboard", true), compare: page("compare", false), whatif: page("whatif", false),
    runs: page("runs", false), ui: page("ui", false, "src/ui.css"),
  },
  builder: {
    async buildApp(builder) {
      await builder.build(builder.environments.client);
      await builder.build(builder.environments.compare);
      await builder.build(builder.environments.whatif);
      await builder.build(builder.environments.runs);
      await builder.build(builder.environments.ui);
    },
  },
});
