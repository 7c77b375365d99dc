import { render } from "preact";
import { App } from "./app";
import { currentLocale } from "./i18n";
import "./styles.css";

document.documentElement.lang = currentLocale();
const root = document.getElementById("root");
if (root) render(<App />, root);
