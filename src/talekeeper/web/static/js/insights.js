// insights page: filled in below.
import "./ui.js";
